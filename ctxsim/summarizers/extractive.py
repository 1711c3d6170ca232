"""`extractive`: a deterministic, offline summary built from marker lines.

Source: seed 000's ExtractiveSummarizer (semantics only; written anew for canonical messages).
It relies on the convention a coding agent's system prompt asks for: the agent writes
`DECISION:`, `TODO:` and `DONE:` lines (and may write `TASK:`, `USER:`, `ERROR:`, `FILE:`).
What it keeps:

- the task: the first user message (or the `TASK:` line of an earlier summary);
- every later user message, with its turn (`USER: (turn 20) ...`);
- every `DECISION:` line, with the turn it was written in;
- open `TODO:` items (a `DONE:` with the same text closes one);
- error lines (`SomethingError: ...` / `...Exception: ...`) seen in tool output, newest
  `max_errors`, each with the turn it was last seen;
- files touched (paths in tool-call arguments, `FILE:` lines), newest `max_files`, each with the
  tool and turn of its last use;
- the current notes, after a `Current notes:` line.

Its output uses the same markers, one fact per line, so summarising a summary keeps every
marker line it had (the notes part is not re-read: the caller passes the current notes again).

Cost. A compaction hands it every message it drops (hundreds of kilobytes of tool output), so the
costly patterns run only where they can match: error lines only on the lines holding `Error: ` or
`Exception: ` (every error line does; one scan in C finds them), paths only in argument strings
holding a `/` (every path does). The results are exactly those of matching everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxsim.model import Message, ToolCall
from ctxsim.policies.clear import error_lines

MARKERS = ("TASK", "USER", "DECISION", "TODO", "DONE", "ERROR", "FILE")
MARKER = re.compile(r"(TASK|USER|DECISION|TODO|DONE|ERROR|FILE): (.+)")
HEADER = re.compile(r"Summary of turns (\d+) to (\d+)\b")
SEEN = re.compile(r"(.*) \(last seen turn (\d+)\)")
NOTES_LINE = "Current notes:"
# A path with at least one directory part and an extension (src/billing/tax.py, /repo/a.txt).
PATH = re.compile(r"(?<![\w./~-])(?:~?/)?(?:[\w.-]+/)+[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,9}\b")
FILE_USE = re.compile(r"(.+), last [^,]+?(?: at turn \d+)?")  # the form this summarizer writes
PATH_KEYS = frozenset({"path", "file", "file_path", "filepath", "filename", "paths", "files", "target_file",
                       "notebook_path"})


def marker_lines(text: str) -> list[str]:
    """The marker lines of a text (the facts an extractive summary carries), in order."""
    return [line for line in text.split("\n") if MARKER.fullmatch(line)]


def one_line(text: str) -> str:
    """Whitespace (newlines included) collapsed to single spaces, so a fact stays on its line."""
    return " ".join(text.split())


def paths_in_arguments(arguments: Any, key: str | None = None) -> Iterator[str]:
    """File paths in a tool call's arguments: values of path-like keys, and paths inside strings."""
    found: list[str] = []
    _collect_paths(arguments, key, found)
    return iter(found)


def _collect_paths(arguments: Any, key: str | None, out: list[str]) -> None:
    """`paths_in_arguments`, appended to `out` (plain dicts and strings take the short way)."""
    if isinstance(arguments, str):  # the usual leaf, tested first: a string is neither of the others
        value = arguments.strip()
        if key in PATH_KEYS and value and "\n" not in value and len(value) < 300:
            out.append(value)
        elif "/" in arguments:  # every PATH match holds one
            out.extend(PATH.findall(arguments))
        return
    kind = type(arguments)  # the exact types before the ABC check, the slow one
    if kind is dict or isinstance(arguments, Mapping):
        for k, v in arguments.items():
            _collect_paths(v, str(k).lower(), out)
    elif kind is list or kind is tuple or isinstance(arguments, (list, tuple)):
        for v in arguments:
            _collect_paths(v, key, out)


def file_key(text: str) -> str:
    """What identifies a FILE fact: the path of a `PATH, last TOOL at turn N` line, else its first
    path, else the whole line."""
    match = FILE_USE.fullmatch(text)
    if match:
        return match.group(1)
    match = PATH.search(text)
    return match.group(0) if match else text


def _touch(table: dict[str, Any], key: str, value: Any) -> None:
    """Insert or move `key` to the newest position (the table stays ordered by recency)."""
    table.pop(key, None)
    table[key] = value


class Block:
    """Marker lines of one kind that a summary only ever adds to (USER, DECISION), each ending in a newline.

    A summary takes over the lines of the one before it and adds the new ones, so the block of the new
    summary is the old block's text with the new lines after it (`base` and `added`). Whoever sizes the
    summary keeps the old block's size in `sizes` and adds the size of the new lines only; once sized, a
    block lets go of its base.
    """

    __slots__ = ("added", "base", "sizes", "text")

    def __init__(self, base: Block | None, added: list[str]) -> None:
        self.text: str = (base.text if base is not None else "") + "".join(added)
        # a base never sized is not kept: a chain of unsized blocks would keep every old summary alive
        self.base: Block | None = base if base is not None and base.base is None else None
        self.added = added  # the lines added to `base`, each with its newline (all of them without a base)
        if base is not None and self.base is None:
            self.added = [self.text]
        self.sizes: dict[object, int] = {}  # measure -> size of `text`


@dataclass
class Layout:
    """How the text of the summary written last is put together, for sizing it piece by piece.

    text == "".join(parts in order): `head` (the header and TASK lines), `users`, `decisions` (Blocks or
    None), `rest` (the TODO, ERROR and FILE lines) and `tail` (the blank line, the notes line and the notes).
    Every line of the body ends in a newline; `tail` starts with the second newline of the blank line.
    """

    text: str
    head: list[str]
    users: Block | None
    decisions: Block | None
    rest: list[str]
    tail: str


@dataclass
class _Taken:
    """What reading a summary this summarizer wrote gives (the facts its lines carry), so that the next
    summary that takes it over starts from there instead of reading it again: O(new messages) per summary."""

    text: str
    span: tuple[int, int] | None  # its header's turns
    task: str
    users: Block | None
    decisions: Block | None
    todos: dict[str, None]
    errors: dict[str, int | None]
    files: dict[str, str]


KEEP_TAKEN = 8  # summaries whose facts are kept for taking over


class ExtractiveSummarizer:
    name = "extractive"

    def __init__(self, max_errors: int = 5, max_files: int = 12) -> None:
        if max_errors < 0 or max_files < 0:
            raise ValueError("max_errors and max_files must not be negative")
        self.max_errors = max_errors
        self.max_files = max_files
        # the facts of the summaries written last, newest last (a policy may leave its newest summary
        # unused, when it is not smaller than what it would replace, and take over an older one next)
        self._taken: dict[int, _Taken] = {}
        self.layout: Layout | None = None  # how the summary written last is put together

    def summarize(self, messages: Sequence[Message], notes: str = "", *,
                  turns: Sequence[int | None] | None = None,
                  calls: Mapping[str, ToolCall] | None = None) -> str:
        if turns is None:
            turns = _count_turns(messages)
        known_calls: dict[str, ToolCall] = dict(calls or {})
        task = ""
        users: list[str] = []
        decisions: list[str] = []
        todos: dict[str, None] = {}
        errors: dict[str, int | None] = {}
        files: dict[str, str] = {}
        first: int | None = None  # the span of turns covered: the lowest and the highest seen
        last: int | None = None
        user_base: Block | None = None  # the USER and DECISION lines of the summary taken over, if any
        decision_base: Block | None = None
        start = 0
        taken = self._taken.get(id(messages[0].content)) if messages and messages[0].role == "summary" else None
        if taken is not None and messages[0].content is taken.text:
            # The summary this summarizer wrote last comes first: its facts are known, it is not read again.
            # (Reading it gives exactly these: each of its lines is MARKER + one fact with no newline.)
            first = last = turns[0]
            if taken.span is not None:
                first, last = taken.span
            task = taken.task
            user_base, decision_base = taken.users, taken.decisions
            todos, errors, files = dict(taken.todos), dict(taken.errors), dict(taken.files)
            start = 1

        for message, recorded_turn in zip(messages[start:], turns[start:], strict=True):
            turn = recorded_turn
            role = message.role
            lo = hi = turn
            if role == "summary":
                header = HEADER.search(message.content)
                if header:
                    lo, hi = int(header.group(1)), int(header.group(2))
                    turn = turn if turn is not None else hi
            if lo is not None and (first is None or lo < first):
                first = lo
            if hi is not None and (last is None or hi > last):
                last = hi
            if role == "user":
                text = one_line(message.content)
                if not text:
                    continue
                if not task and turn in (None, 1):
                    task = text
                else:
                    users.append(f"(turn {turn}) {text}" if turn is not None else text)
            elif role in ("assistant", "summary"):
                for call in message.tool_calls:
                    known_calls[call.id] = call
                own = turn if role == "assistant" else None  # a summary's lines carry their own turns
                stamp = f"(turn {own}) " if own is not None else ""
                for kind, text in _markers(message.content, stop_at_notes=role == "summary"):
                    if kind == "TASK":
                        task = text
                    elif kind == "USER":
                        users.append(text)
                    elif kind == "DECISION":
                        decisions.append(stamp + text)
                    else:
                        _fact(kind, text, own, todos, errors, files)
            elif role == "tool":
                for error in error_lines(message.content):
                    _touch(errors, error, turn)
                called = known_calls.get(message.tool_call_id or "")
                if called is not None:
                    tool = message.name or called.name
                    when = f" at turn {turn}" if turn is not None else ""
                    for path in paths_in_arguments(called.arguments):
                        _touch(files, path, f"{path}, last {tool}{when}")

        head = [_header(first, last) + "\n"]
        if task:
            head.append(f"TASK: {task}\n")
        user_block = _block(user_base, [f"USER: {u}\n" for u in users])
        decision_block = _block(decision_base, [f"DECISION: {d}\n" for d in decisions])
        rest = [f"TODO: {t}\n" for t in todos]
        kept_errors = list(errors.items())[-self.max_errors:] if self.max_errors else []
        for error, seen_turn in kept_errors:
            rest.append(f"ERROR: {error} (last seen turn {seen_turn})\n" if seen_turn is not None
                        else f"ERROR: {error}\n")
        kept_files = list(files.values())[-self.max_files:] if self.max_files else []
        rest += [f"FILE: {f}\n" for f in kept_files]
        tail = f"\n{NOTES_LINE}\n{notes.strip() or '(empty)'}"
        text = "".join(head) + (user_block.text if user_block else "") + (decision_block.text if decision_block
                                                                           else "") + "".join(rest) + tail
        self.layout = Layout(text, head, user_block, decision_block, rest, tail)
        facts = self._facts(text, first, last, task, user_block, decision_block, rest)
        self._taken[id(text)] = facts
        while len(self._taken) > KEEP_TAKEN:
            del self._taken[next(iter(self._taken))]
        return text

    def _facts(self, text: str, first: int | None, last: int | None, task: str, users: Block | None,
               decisions: Block | None, rest: list[str]) -> _Taken:
        """What reading `text` (just written) would give: TASK, USER and DECISION lines give back the facts
        written (one line each, no newline in any), the few TODO, ERROR and FILE lines are read as a summary's."""
        if last is not None:
            span: tuple[int, int] | None = (first if first is not None else 1, last)
        else:  # "Summary of earlier turns": a later line may look like a header
            header = HEADER.search(text)
            span = (int(header.group(1)), int(header.group(2))) if header else None
        todos: dict[str, None] = {}
        errors: dict[str, int | None] = {}
        files: dict[str, str] = {}
        for line in rest:
            match = MARKER.fullmatch(line[:-1])
            if match:
                _fact(match.group(1), match.group(2), None, todos, errors, files)
        return _Taken(text, span, task, users, decisions, todos, errors, files)


def _block(base: Block | None, added: list[str]) -> Block | None:
    if not added:
        return base
    return Block(base, added)


def _fact(kind: str, text: str, own: int | None, todos: dict[str, None], errors: dict[str, int | None],
          files: dict[str, str]) -> None:
    """A TODO, DONE, ERROR or FILE marker line's fact, taken into the tables."""
    if kind == "TODO":
        todos[text] = None
    elif kind == "DONE":
        todos.pop(text, None)
    elif kind == "ERROR":
        seen = SEEN.fullmatch(text)
        if seen:
            _touch(errors, seen.group(1), int(seen.group(2)))
        else:
            _touch(errors, text, own)
    elif kind == "FILE":
        _touch(files, file_key(text), text)


def _header(first: int | None, last: int | None) -> str:
    if last is None:
        return "Summary of earlier turns. Their tool output is gone: call the tools again for details."
    return (f"Summary of turns {first if first is not None else 1} to {last}. "
            "Their tool output is gone: call the tools again for details.")


def _markers(text: str, stop_at_notes: bool) -> Iterator[tuple[str, str]]:
    for line in text.split("\n"):
        if stop_at_notes and line == NOTES_LINE:
            return
        match = MARKER.fullmatch(line)
        if match:
            yield match.group(1), match.group(2)


def _count_turns(messages: Sequence[Message]) -> list[int | None]:
    """Turns counted within the span when the caller has none: assistant messages number them."""
    out: list[int | None] = []
    assistants = 0
    for m in messages:
        if m.role == "assistant":
            assistants += 1
            out.append(assistants)
        elif m.role == "user":
            out.append(assistants + 1)
        elif m.role == "summary":
            out.append(None)
        else:
            out.append(max(assistants, 1))
    return out
