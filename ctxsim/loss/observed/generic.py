"""Any other source (the native format, mini-swe-agent, SWE-agent, chat logs): a shell tool (`bash`, `shell`,
`execute_bash`, `run`: `_shell`) and the common read tools (`read_file`, `Read`, `view`: a path). A re-read is
sized as one usual slice (`SLICE_TOKENS`)."""

from __future__ import annotations

from ctxsim.loss.observed import Detector, Target, arguments, file_target, first, register
from ctxsim.loss.observed._shell import shell_target
from ctxsim.model import ToolCall

SLICE_TOKENS = 2_000
READS = ("read_file", "Read", "view", "open_file", "open", "cat")


def target(call: ToolCall) -> Target | None:
    args = arguments(call)
    name = call.name
    if name in READS:
        return file_target(args, ("path", "file_path", "absolute_path", "file", "filename"))
    if name in ("bash", "shell", "execute_bash", "run", "run_shell_command", "execute_command", "exec_command"):
        return shell_target(args.get("command", args.get("cmd")))
    if name in ("fetch", "web_fetch", "browse"):
        url = first(args, "url")
        return Target("url", url) if url else None
    return None


register(Detector("generic", target, SLICE_TOKENS, frozenset(READS), module=__name__))
