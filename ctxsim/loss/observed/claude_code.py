"""Claude Code's tools: `Read` (file_path, offset/limit: a slice), `Grep` and `Glob` (a search: pattern, path,
glob, type, mode), `Bash` (a command: `_shell`), `WebFetch` (a URL), `NotebookRead`; `Write`, `Edit`,
`MultiEdit`, `NotebookEdit` change a file (the context held it; no re-fetch). `Read` returns at most 2,000
lines; agents that re-read after a compaction mostly read a slice (offset/limit), so a re-read is sized as one
usual slice (`SLICE_TOKENS`)."""

from __future__ import annotations

from ctxsim.loss.observed import Detector, Target, arguments, file_target, first, register, search_target
from ctxsim.loss.observed._shell import shell_target
from ctxsim.model import ToolCall

SLICE_TOKENS = 1_000  # a Read with offset/limit of about 60-100 lines of code


def target(call: ToolCall) -> Target | None:
    args = arguments(call)
    name = call.name
    if name in ("Read", "NotebookRead"):
        return file_target(args, ("file_path", "notebook_path", "path"))
    if name in ("Write", "Edit", "MultiEdit", "NotebookEdit"):
        return file_target(args, ("file_path", "notebook_path", "path"), (), reads=False)
    if name in ("Grep", "Glob", "LS"):
        return search_target(args, ("pattern", "path", "glob", "type", "output_mode", "-i", "-n", "-A", "-B", "-C"))
    if name == "Bash":
        return shell_target(args.get("command"))
    if name in ("WebFetch", "WebSearch"):
        url = first(args, "url", "query")
        return Target("url", url) if url else None
    return None


WRITES = frozenset(["Write", "Edit", "MultiEdit", "NotebookEdit", "TodoWrite", "TaskCreate", "TaskUpdate"])
register(Detector("claude-code", target, SLICE_TOKENS, frozenset(["Read", "NotebookRead"]), WRITES, module=__name__))
