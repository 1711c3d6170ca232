"""`truncate`: head+tail truncation of tool output, yoagent's level 1.

Source: yoagent `src/context.rs` 0.15+ (reference/yoagent-context.md section 2.5, "L1"):
a tool result longer than its tool's line cap keeps its first and last lines and
says how many it dropped in between. The marker takes three lines (blank, marker,
blank) out of the cap, so the result has exactly `max_lines` lines and truncating
it again changes nothing: settled history is never rewritten twice. With a cap of
four lines or fewer there is no room for a marker and only the first lines are
kept.

By default the cap is applied as each result is appended (yoagent's
`truncate_tool_output_on_append`), so the bytes a provider caches are the bytes
that stay. With `on_append=false` it is applied retroactively instead: before
every request, every over-long result in the history is cut, which rewrites the
cached prefix from the first one it cuts.

Tools that page themselves (yoagent's `read_file`) are exempt by default: cutting
the middle out of a file read removes the part the agent asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ctxsim.model import Message
from ctxsim.params import field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies.base import Edit, Item, Rewrite, Truncate, View

MARKER_LINES = 3  # a blank line, the marker, a blank line
MARKER = "[... {omitted} lines truncated ...]"


def split_lines(text: str) -> list[str]:
    """Lines as Rust's `str::lines` yields them: split on \\n, no empty last line, \\r\\n ends a line."""
    if not text:
        return []
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [p.removesuffix("\r") for p in parts]


def first_line(text: str) -> str:
    """The first of `split_lines(text)` that is not blank ("" if none), without splitting the rest."""
    start, n = 0, len(text)
    while start < n:
        end = text.find("\n", start)
        if end < 0:
            end = n
        line = text[start:end]
        line = line.removesuffix("\r")
        if line.strip():
            return line
        start = end + 1
    return ""


def line_count(text: str) -> int:
    """len(split_lines(text)), without building the lines."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def truncate_text(text: str, max_lines: int) -> str:
    """Keep head and tail so the result has exactly `max_lines` lines; idempotent."""
    if text.count("\n") < max_lines:  # at most max_lines lines: nothing to cut (and no need to split)
        return text
    lines = split_lines(text)
    if len(lines) <= max_lines:
        return text
    if max_lines <= MARKER_LINES + 1:
        return "\n".join(lines[:max_lines])
    keep = max_lines - MARKER_LINES
    head = keep // 2
    tail = keep - head
    omitted = len(lines) - head - tail
    marker = MARKER.format(omitted=omitted)
    return "\n".join(lines[:head]) + f"\n\n{marker}\n\n" + "\n".join(lines[len(lines) - tail:])


def parse_overrides(entries: Sequence[str]) -> dict[str, int | None]:
    """`("bash=100", "read_file=none")` -> {"bash": 100, "read_file": None}; strict."""
    out: dict[str, int | None] = {}
    for entry in entries:
        name, eq, value = entry.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not name or not value:
            raise ValueError(f"override {entry!r} must be TOOL=LINES or TOOL=none")
        if name in out:
            raise ValueError(f"tool {name!r} is overridden twice")
        if value.lower() in ("none", "off", "max"):
            out[name] = None
            continue
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"override {entry!r}: LINES must be a positive integer or none")
        out[name] = int(value)
    return out


@dataclass(frozen=True)
class LineCaps:
    """Which line cap applies to which tool (yoagent's `max_lines_for`)."""

    max_lines: int
    exempt: frozenset[str]
    overrides: dict[str, int | None]

    @classmethod
    def of(cls, max_lines: int, exempt: Sequence[str], overrides: Sequence[str]) -> LineCaps:
        if max_lines < 1:
            raise ValueError("max_lines must be at least 1")
        table = parse_overrides(overrides)
        both = sorted(set(exempt) & set(table))
        if both:
            raise ValueError(f"tools both exempt and overridden: {', '.join(both)}")
        return cls(max_lines, frozenset(exempt), table)

    def limit(self, tool: str | None) -> int | None:
        """The cap for `tool`'s output; None means never truncated."""
        name = tool or ""
        if name in self.exempt:
            return None
        return self.overrides.get(name, self.max_lines)

    def cut(self, message: Message) -> Message | None:
        """The truncated tool result, or None when it is within its cap (or not a tool result)."""
        if message.role != "tool":
            return None
        cap = self.limit(message.name)
        if cap is None:
            return None
        text = truncate_text(message.content, cap)
        if text == message.content:
            return None
        return message.with_content(text)


@dataclass(frozen=True)
class TruncateParams:
    max_lines: int = field(default=200, metadata=field_doc(
        "line cap on tool output, marker included (yoagent tool_output_max_lines; 50 up to 0.14.2)"))
    exempt_tools: tuple[str, ...] = field(default=("read_file",), metadata=field_doc(
        "tools never truncated (yoagent's default override exempts its self-paging read_file)"))
    overrides: tuple[str, ...] = field(default=(), metadata=field_doc(
        "per-tool caps as TOOL=LINES or TOOL=none, e.g. [bash=100,search=50]"))
    on_append: bool = field(default=True, metadata=field_doc(
        "cap each result as it is appended; false: cut over-long results in history before each request"))

    def __post_init__(self) -> None:
        LineCaps.of(self.max_lines, self.exempt_tools, self.overrides)


class TruncatePolicy:
    """With `on_append=false`, cuts each tool result once, as it arrives or as another stage puts it in.

    A result within its cap (or cut, which is idempotent) stays within it, so a request looks only at
    the results the engine told `observe` of since the previous one (appended, or put in by a stage:
    a stub, a mask, a copy): O(new).
    """

    name = "truncate"

    # Only a retroactive truncate (`on_append=false`) observes: cutting on arrival needs no telling of
    # changes, and an observer the engine need not call costs nothing at each append and splice.
    observe: Callable[[Sequence[Item], Sequence[Item]], None]

    def __init__(self, params: TruncateParams) -> None:
        self.params = params
        self.caps = LineCaps.of(params.max_lines, params.exempt_tools, params.overrides)
        self._fresh: list[Item] = []  # tool results put in the history since the last decision
        if not params.on_append:
            self.observe = self._observe

    def start(self) -> None:
        self._fresh = []

    def _observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        self._fresh.extend(item for item in added if item.message.role == "tool")

    def on_append(self, view: View, message: Message) -> Rewrite | None:
        if not self.params.on_append:
            return None
        new = self.caps.cut(message)
        if new is None:
            return None
        cap = self.caps.limit(message.name)
        return Rewrite(new, "truncate", f"{message.name or 'tool'} output cut to {cap} lines")

    def decide(self, view: View) -> Sequence[Edit]:
        if self.params.on_append:
            return ()
        fresh = sorted((item for item in self._fresh if item.alive), key=_position)
        self._fresh = []
        cuts = []
        for item in fresh:
            if item.pinned:
                continue
            new = self.caps.cut(item.message)
            if new is not None:
                cuts.append(Truncate(item, new))
        if not cuts:
            return ()
        return (Edit("truncate", tuple(cuts), f"truncated {len(cuts)} tool results"),)


def _position(item: Item) -> int:
    return item.pos


class TruncateReference(TruncatePolicy):
    """`truncate` from scratch: with `on_append=false`, every over-long tool result in the context is cut
    at every request (its appending half is the policy's own). What `TruncatePolicy` must match."""

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        pass

    def decide(self, view: View) -> Sequence[Edit]:
        if self.params.on_append:
            return ()
        cuts = []
        for item in view.items:
            new = self.caps.cut(item.message) if not item.pinned else None
            if new is not None:
                cuts.append(Truncate(item, new))
        if not cuts:
            return ()
        return (Edit("truncate", tuple(cuts), f"truncated {len(cuts)} tool results"),)


REFERENCE = TruncateReference

register(PolicyInfo(
    "truncate", TruncateParams, TruncatePolicy,
    "yoagent src/context.rs 0.15+ level 1 (truncate_text_head_tail, truncate_tool_output_on_append)",
    "cut tool output to its head and tail lines, on append or retroactively", __name__,
    space={"max_lines": (20, 50, 100, 200, 400, 800)}, weight=1.3))
