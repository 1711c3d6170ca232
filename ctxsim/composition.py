"""What each request's prompt is made of: tokens by role and by tool.

The history keeps a running count per column (updated on every append and
edit, so recording it costs nothing per request beyond a copy). A run's
`composition` block in run.json (version 1):

    "composition": {"version": 1, "columns": ["tools+system", "user", ...],
                    "requests": [1, 2, ...], "tokens": [[612, 40, ...], ...]}

`tokens[i][j]` is the tokens of column j in the prompt of request `requests[i]`
(the agent's own requests, after the policy's edits); a row sums to that
request's `context_tokens`. Columns: `tools+system` (tool schemas, system
prompt, hidden prefix), one per role (`system`, `user`, `assistant` with its
tool calls, `summary`), `cleared` (stubs that replaced cleared content) and
`tool:NAME` (live tool results by tool).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any

from ctxsim.errors import CtxsimError

VERSION = 1
# One session's snapshots: its history's columns (as they end), the request numbers, and each
# request's column values.
Snapshots = tuple[dict[str, int], list[int], list[tuple[int, ...]]]
HEAD = "tools+system"
FIXED = (HEAD, "system", "user", "assistant", "summary", "cleared")


def category(item: Any) -> str:
    """The column an item of the history counts under."""
    return "cleared" if item.cleared else column_of(item.message)


def column_of(message: Any) -> str:
    """The column of a message as it arrives (not a stub)."""
    role: str = message.role
    if role == "tool":
        return f"tool:{message.name or 'unknown'}"
    return role


def snapshot(history: Any) -> dict[str, int]:
    """Tokens of the prompt as it stands, by column, computed from scratch (for checks)."""
    out = {HEAD: history.base_tokens}
    for item in history.items:
        key = category(item)
        out[key] = out.get(key, 0) + item.tokens
    return out


@dataclass
class Composition:
    columns: list[str]
    requests: list[int] = field(default_factory=list)
    tokens: list[list[int]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "columns": list(self.columns), "requests": list(self.requests),
                "tokens": [list(row) for row in self.tokens]}

    @classmethod
    def from_json(cls, data: Any) -> Composition:
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise CtxsimError(f"composition block: version {VERSION} expected")
        columns, requests, tokens = data["columns"], data["requests"], data["tokens"]
        if len(requests) != len(tokens) or any(len(row) != len(columns) for row in tokens):
            raise CtxsimError("composition block: requests, tokens and columns do not line up")
        return cls(list(columns), [int(r) for r in requests], [[int(v) for v in row] for row in tokens])

    @classmethod
    def of(cls, sessions: Sequence[Snapshots]) -> Composition:
        """From each session's snapshots: its history's column counts, and per request the
        request's number and the counts' values then (`tuple(columns.values())`).

        A history only ever adds columns, in order (a column that empties stays, at 0), so the
        values of a snapshot line up with the first columns of its history as it ends.
        """
        series: dict[str, list[int]] = {}  # column -> its tokens at every request so far
        requests: list[int] = []
        for columns, numbers, values in sessions:
            # strict=False: the snapshots may cover fewer columns than the history ends with
            for key, column in zip(columns, zip_longest(*values, fillvalue=0), strict=False):
                series.setdefault(key, [0] * len(requests)).extend(column)
            requests.extend(numbers)
            for tokens in series.values():  # columns this session did not have
                tokens.extend([0] * (len(requests) - len(tokens)))
        seen = {key for key, tokens in series.items() if any(tokens)}
        names = [c for c in FIXED if c in seen] + sorted(k for k in seen if k not in FIXED)
        rows = [list(row) for row in zip(*(series[c] for c in names), strict=True)] if names else [[] for _ in requests]
        return cls(names, requests, rows)

    def series(self) -> dict[str, list[int]]:
        return {c: [row[j] for row in self.tokens] for j, c in enumerate(self.columns)}
