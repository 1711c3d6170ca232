"""OpenHands' tools: `str_replace_editor` (command `view` reads a path, `view_range` a slice; `create`,
`str_replace`, `insert` change it), `read_file` / `read` (path), `execute_bash` / `run` (`_shell`),
`browser` / `web_read` (url). A `view` shows the whole file with line numbers (a folder: two levels of it); a
re-read is sized as one usual slice (`SLICE_TOKENS`)."""

from __future__ import annotations

from ctxsim.loss.observed import Detector, Target, arguments, file_target, first, register
from ctxsim.loss.observed._shell import shell_target
from ctxsim.model import ToolCall

SLICE_TOKENS = 2_000
EDITORS = ("str_replace_editor", "edit_file", "file_editor")


def target(call: ToolCall) -> Target | None:
    args = arguments(call)
    name = call.name
    if name in EDITORS:
        if args.get("command") == "view":
            return file_target(args, ("path",), ("view_range",))
        return file_target(args, ("path",), (), reads=False)
    if name in ("read_file", "read"):
        return file_target(args, ("path",), ("start", "end", "view_range"))
    if name in ("execute_bash", "run", "cmd_run", "bash"):
        return shell_target(args.get("command"))
    if name in ("browser", "web_read", "browse"):
        url = first(args, "url")
        return Target("url", url) if url else None
    return None


register(Detector("openhands", target, SLICE_TOKENS, frozenset([*EDITORS, "read_file", "read"]), module=__name__))
