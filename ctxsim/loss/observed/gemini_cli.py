"""Gemini CLI's tools: `read_file` (absolute_path or file_path, offset/limit), `read_many_files` (paths),
`glob`, `search_file_content` / `grep` (pattern, path, include), `list_directory` (path), `run_shell_command`
(`_shell`), `web_fetch` (prompt with its URLs), `google_web_search` (query); `write_file` and `replace` change a
file. `read_file` returns up to 2,000 lines; a re-read is sized as one usual slice (`SLICE_TOKENS`)."""

from __future__ import annotations

from ctxsim.loss.observed import Detector, Target, arguments, file_target, first, register, search_target
from ctxsim.loss.observed._shell import shell_target
from ctxsim.model import ToolCall

SLICE_TOKENS = 1_500


def target(call: ToolCall) -> Target | None:
    args = arguments(call)
    name = call.name
    if name == "read_file":
        return file_target(args, ("absolute_path", "file_path", "path"))
    if name == "read_many_files":
        paths = args.get("paths")
        if isinstance(paths, list) and paths:
            return Target("file", " ".join(sorted(str(p) for p in paths)))
        return None
    if name in ("write_file", "replace", "edit"):
        return file_target(args, ("file_path", "absolute_path", "path"), (), reads=False)
    if name in ("glob", "search_file_content", "grep", "list_directory"):
        return search_target(args, ("pattern", "path", "include", "dir_path"))
    if name == "run_shell_command":
        return shell_target(args.get("command"))
    if name in ("web_fetch", "google_web_search"):
        url = first(args, "url", "prompt", "query")
        return Target("url", url) if url else None
    return None


WRITES = frozenset(["write_file", "replace", "edit", "save_memory"])
READS = frozenset(["read_file", "read_many_files"])
register(Detector("gemini-cli", target, SLICE_TOKENS, READS, WRITES, module=__name__))
