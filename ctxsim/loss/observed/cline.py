"""Cline's (and Roo Code's) tools: `read_file` (path; Roo: a slice by line range), `search_files` (path, regex,
file_pattern), `list_files`, `list_code_definition_names` (path), `execute_command` (`_shell`),
`browser_action` / `web_fetch` (url); `write_to_file`, `replace_in_file`, `apply_diff` change a file. Cline reads
whole files: a re-read is sized as the source, capped at one large read (`SLICE_TOKENS`)."""

from __future__ import annotations

from ctxsim.loss.observed import Detector, Target, arguments, file_target, first, register, search_target
from ctxsim.loss.observed._shell import shell_target
from ctxsim.model import ToolCall

SLICE_TOKENS = 4_000


def target(call: ToolCall) -> Target | None:
    args = arguments(call)
    name = call.name
    if name == "read_file":
        return file_target(args, ("path",), ("start_line", "end_line", "line_range"))
    if name in ("write_to_file", "replace_in_file", "apply_diff", "insert_content", "search_and_replace"):
        return file_target(args, ("path",), (), reads=False)
    if name in ("search_files", "list_files", "list_code_definition_names"):
        return search_target(args, ("path", "regex", "file_pattern", "recursive"))
    if name == "execute_command":
        return shell_target(args.get("command"))
    if name in ("browser_action", "web_fetch"):
        url = first(args, "url")
        return Target("url", url) if url else None
    return None


WRITES = frozenset(["write_to_file", "replace_in_file", "apply_diff", "insert_content", "search_and_replace"])
register(Detector("cline", target, SLICE_TOKENS, frozenset(["read_file"]), WRITES, module=__name__))
