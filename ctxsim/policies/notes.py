"""`notes`: a bounded notes file the agent keeps, as memory that survives compaction.

Source: seed 000's NotesFile (notes_write appends an entry to a section, notes_rewrite replaces a
section's entries, an empty rewrite deletes the section; the file is `## Section` headings with
`- entry` lines; a write that would take the file past `max_tokens` is refused with an error
telling the agent to merge entries first) and its pinned `notes_read`.

In replay the file is rebuilt from the trace: each `notes_write` / `notes_rewrite` tool result,
as it is appended, applies its call's arguments (`{"section": ..., "entry": ...}`,
`{"section": ..., "entries": [...]}`, or seed 000's `"section | entry"` string) to the notes the
policy keeps for the session. A write the bound refuses leaves the notes unchanged and its tool
result is rewritten to the error the agent would have seen (an event of kind "notes_refused").

`notes_read` results are pinned so that no later stage edits them: with `pin_reads`, a result
that the set-up did not already pin (`pin_tools`) is re-inserted pinned, which is logged as a
"pin" event that frees nothing.

How other stages use it: the notes of a session are kept in `view.shared` (under "notes");
`notes_text(view)` returns them ("" when no notes stage runs); `compact`, `server_compact` and `hierarchical` end
their summaries with it, as seed 000's summarizers append the current notes. Put `notes` before them in the pipeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ctxsim.model import Message
from ctxsim.params import field_doc
from ctxsim.policies import PolicyInfo, register
from ctxsim.policies.base import NO_TAGS, Edit, Replace, Rewrite, View, shared_of


class NotesBook:
    """The notes file's sections and entries, in the order they were made."""

    def __init__(self) -> None:
        self.sections: dict[str, list[str]] = {}

    def text(self) -> str:
        return render(self.sections)

    def apply(self, tool: str, arguments: Any) -> dict[str, list[str]] | None:
        """The sections after the operation (None when the arguments cannot be read)."""
        parsed = parse_arguments(tool, arguments)
        if parsed is None:
            return None
        section, entries = parsed
        sections = {k: list(v) for k, v in self.sections.items()}
        if tool == "notes_write":
            sections.setdefault(section, []).extend(entries)
        else:
            sections[section] = list(entries)
            if not entries:
                del sections[section]
        return sections


def render(sections: dict[str, list[str]]) -> str:
    return "\n\n".join(f"## {name}\n" + "\n".join(f"- {e}" for e in entries) for name, entries in sections.items())


def parse_arguments(tool: str, arguments: Any) -> tuple[str, list[str]] | None:
    if isinstance(arguments, str):
        name, sep, text = arguments.partition(" | ")
        if not sep:
            return None
        return name.strip(), [text.strip()]
    if not isinstance(arguments, dict):
        return None
    section = arguments.get("section")
    if not isinstance(section, str):
        return None
    if tool == "notes_rewrite" and isinstance(arguments.get("entries"), list):
        return section, [str(e) for e in arguments["entries"]]
    entry = arguments.get("entry", arguments.get("text", arguments.get("content")))
    if isinstance(entry, str):
        return section, [entry]
    if tool == "notes_rewrite" and entry is None:
        return section, []
    return None


def notes_text(where: Any) -> str:
    """The current notes of a session ("" when no notes stage keeps them): `where` is the View a stage
    decides on, or (after a run) the history the session replayed in."""
    board = where.shared if isinstance(where, View) else shared_of(where)
    book = board.get("notes")
    return book.text() if book is not None else ""


def notes_book(view: View) -> NotesBook:
    """The notes a notes stage keeps for the session `view` shows (empty at first)."""
    book = view.shared.get("notes")
    if book is None:
        book = view.shared["notes"] = NotesBook()
    return book


@dataclass(frozen=True)
class NotesParams:
    max_tokens: int = field(default=1_500, metadata=field_doc(
        "writes that would make the notes file larger than this are refused"))
    write_tools: tuple[str, ...] = field(default=("notes_write",), metadata=field_doc(
        "tools that append an entry to a section"))
    rewrite_tools: tuple[str, ...] = field(default=("notes_rewrite",), metadata=field_doc(
        "tools that replace a section's entries"))
    read_tools: tuple[str, ...] = field(default=("notes_read",), metadata=field_doc(
        "tools whose results are the notes (pinned)"))
    pin_reads: bool = field(default=True, metadata=field_doc("pin read_tools results the set-up did not pin"))
    refusal: str = field(default="error: the notes would pass {max_tokens:,} tokens; merge entries with "
                                 "notes_rewrite, then write again", metadata=field_doc(
        "the tool result of a refused write; field {max_tokens}"))

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        try:
            self.refusal.format(max_tokens=self.max_tokens)
        except (KeyError, IndexError, ValueError):
            raise ValueError("refusal may use only the field {max_tokens}") from None


class NotesPolicy:
    name = "notes"

    def __init__(self, params: NotesParams) -> None:
        self.params = params

    def on_append(self, view: View, message: Message) -> Rewrite | None:
        p = self.params
        if message.role != "tool" or message.name is None:
            return None
        if message.name in p.write_tools:
            tool = "notes_write"
        elif message.name in p.rewrite_tools:
            tool = "notes_rewrite"
        else:
            return None
        call = view.call_of(message.tool_call_id)
        if call is None:
            return None
        book = notes_book(view)
        sections = book.apply(tool, call.arguments)
        if sections is None:
            return None
        text = render(sections)
        size = view.size(Message("tool", text)) - view.size(Message("tool", ""))
        if size > p.max_tokens:
            refusal = p.refusal.format(max_tokens=p.max_tokens)
            return Rewrite(_replace_content(message, refusal), "notes_refused",
                           f"refused a {tool} in section {next(iter(_section(call.arguments)), '?')}: "
                           f"{size:,} tokens > {p.max_tokens:,}")
        book.sections = sections
        return None

    def decide(self, view: View) -> Sequence[Edit]:
        if not self.params.pin_reads:
            return ()
        notes_book(view)  # the notes exist (empty) from the first request on
        pins = []
        items = view.items
        for i in range(len(items) - 1, -1, -1):
            item = items[i]
            if item.message.role == "assistant":
                break  # older results were seen at earlier requests
            if item.message.role == "tool" and item.message.name in self.params.read_tools and not item.pinned:
                pins.append(Replace(item, item.message, tokens=item.tokens, tags=NO_TAGS, cleared=False,
                                    pinned=True))
        if not pins:
            return ()
        return (Edit("pin", tuple(pins), f"pinned {len(pins)} notes read result(s)"),)


def _section(arguments: Any) -> list[str]:
    if isinstance(arguments, dict) and isinstance(arguments.get("section"), str):
        return [arguments["section"]]
    if isinstance(arguments, str) and " | " in arguments:
        return [arguments.partition(" | ")[0].strip()]
    return []


def _replace_content(message: Message, text: str) -> Message:
    return replace(message, content=text, is_error=True)


register(PolicyInfo(
    "notes", NotesParams, NotesPolicy,
    "seed 000 NotesFile (bounded notes that survive compaction) and its pinned notes_read",
    "rebuild the agent's notes file from notes_write/notes_rewrite calls; refuse writes past max_tokens",
    __name__,
    weight=1.5))
