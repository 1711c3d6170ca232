"""What a product puts back into the context after it compacts, beside the summary (a helper of `compact`).

Claude Code (`reattach=claude-code`): after a compaction it re-reads the files the conversation read
most recently and renders them, with the todo list and the current plan, into the first request after
the summary, as attachments the transcript does not log. Rules, from the post-compaction restore of
the Claude Code source as reported in /work's reference (providers-2026-update.md, "pipeline order":
"Post-compact restore: <=5 files, 5K each, 50K total"), and from the two manual-compact sessions in the
sample transcripts (the first prompt after the summary is 24-29k tokens larger than summary and head):

- the newest distinct files read (a `Read` / `read_file` call with a `file_path` or `path`) whose result
  is in the summarised span, newest first, at most `FILES` of them, each at most `FILE_TOKENS` tokens
  (its recorded result's size, cut there), `TOTAL_TOKENS` in all;
- the newest todo list (the arguments of the last `TodoWrite` call) and the newest plan (the `plan`
  argument of the last `ExitPlanMode` call), each as it was written.

The result is one `user` message (its text the paths and the sizes, never the content) whose token
count is the modelled one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctxsim.history import Item
from ctxsim.model import ToolCall

FILES = 5
FILE_TOKENS = 5_000
TOTAL_TOKENS = 50_000
READ_TOOLS = frozenset({"Read", "read_file", "ReadFile"})
TODO_TOOLS = frozenset({"TodoWrite"})
PLAN_TOOLS = frozenset({"ExitPlanMode"})
PATH_KEYS = ("file_path", "path", "absolute_path")


@dataclass(frozen=True)
class Reattached:
    files: tuple[str, ...]
    file_tokens: int
    todo_tokens: int
    plan_tokens: int

    @property
    def tokens(self) -> int:
        return self.file_tokens + self.todo_tokens + self.plan_tokens

    def text(self) -> str:
        parts = [f"[re-attached after compaction: {len(self.files)} file(s), {self.file_tokens:,} tokens"]
        if self.todo_tokens:
            parts.append(f"todo list {self.todo_tokens:,} tokens")
        if self.plan_tokens:
            parts.append(f"plan {self.plan_tokens:,} tokens")
        return "; ".join(parts) + "]"


def _path(call: ToolCall) -> str | None:
    args = call.arguments if isinstance(call.arguments, dict) else {}
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def claude_code(items: Sequence[Item], calls: dict[str, ToolCall], text_tokens: Callable[[str], int]) -> Reattached:
    """What Claude Code re-attaches after summarising `items` (`calls`: their tool calls by id)."""
    files: list[str] = []
    file_tokens = 0
    todo = plan = 0
    for item in reversed(items):
        m = item.message
        if m.role == "assistant":
            for call in reversed(m.tool_calls):
                args = call.arguments if isinstance(call.arguments, dict) else {}
                if not todo and call.name in TODO_TOOLS:
                    todo = text_tokens(json.dumps(args, ensure_ascii=False, sort_keys=True))
                if not plan and call.name in PLAN_TOOLS and isinstance(args.get("plan"), str):
                    plan = text_tokens(args["plan"])
            continue
        if m.role != "tool" or len(files) >= FILES or file_tokens >= TOTAL_TOKENS:
            continue
        read = calls.get(m.tool_call_id or "")
        if read is None or read.name not in READ_TOOLS:
            continue
        path = _path(read)
        if path is None or path in files:
            continue
        files.append(path)
        file_tokens += min(FILE_TOKENS, item.tokens, TOTAL_TOKENS - file_tokens)
    return Reattached(tuple(files), file_tokens, todo, plan)

