"""What counts as an identifier: the extraction rules of the loss meter, in one place.

An identifier is a piece of text an agent could not make up and must have read: a recorded
assistant message that uses one which earlier came from a user or tool message needs that
message (or a stub or summary that still holds it). The rules, applied to a message's text
(its content and the string values of its tool calls' arguments; never thinking, keys or ids):

- `url`: `http://` / `https://` up to a space, quote or bracket (trailing `.,;:!?` cut);
- `path`: two or more path parts joined by `/` (`src/billing/tax.py`, `./run.sh`, `/etc/hosts`),
  or a file name with a known extension (`tax.py`, `Cargo.toml`; `FILE_EXTENSIONS`);
- `error`: a line that starts with an error name (`TypeError: ...`, `AssertionError`, `error:`,
  `FAILED ...`, `panic:`), kept whole (stripped, its first 160 characters);
- `uuid`, `hash` (7 to 64 hex digits holding both a digit and a letter), `ticket` (`INV-2041`,
  `#123`);
- `number`: a number of 3 or more digits (`12,000` and `12_000` are `12000`; `10.01` keeps its point);
- `name`: function, class and variable names: `snake_case` (an inner underscore or a dunder),
  `camelCase`, `PascalCase` of two parts or more (`TypeError`, `ReplayEngine`), dotted names
  (`os.path.join`, `self.items`), and `name(` calls;
- `quoted`: the inside of `"..."`, `'...'` (not an apostrophe) or `` `...` `` on one line,
  2 to 80 characters, stripped.

Too common to mean anything, and so excluded: `STOPLIST` (`self`, `None`, `true`, `e.g`,
`__init__` ...), numbers that are all zeros, quoted strings that are one short lower-case word
(`"name"`, `'yes'`: JSON keys and prose), and anything shorter than 3 characters. The same text
always gives the same identifiers, in order of first appearance (`extract`), with no duplicates.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

FILE_EXTENSIONS = (
    "py pyi ipynb js jsx ts tsx mjs cjs json jsonl toml yaml yml md rst txt cfg ini conf sh bash zsh c h cc "
    "cpp hpp cxx go rs java kt kts rb php cs swift scala sql html htm css scss vue svelte lock xml csv tsv log "
    "env proto gradle mk cmake dockerfile tf lua pl r jl ex exs erl hs ml dart zig nim sol"
).split()

STOPLIST = frozenset("""
self cls None True False none true false null nil undefined NaN this super args kwargs
e.g i.e etc vs a.m p.m __init__ __main__ __name__ __file__ __dict__ __class__ __repr__ __str__
print( len( str( int( dict( list( set( range( type( isinstance( open( main( test( run( get( set(
http:// https:// localhost http://localhost https://localhost www utf-8 utf8 UTF-8 ascii
""".split())

_URL = re.compile(r"https?://[^\s\"'<>`()\[\]{}]+")
_PATH = re.compile(r"(?<![\w/.:-])(?:\.{1,2}/|/|~/)?(?:[\w@+-][\w.@+-]*/)+[\w@+-][\w.@+-]*")
_FILE = re.compile(r"(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:" + "|".join(FILE_EXTENSIONS) + r")(?![\w])",
                   re.IGNORECASE)
_ERROR = re.compile(r"^[ \t]*((?:[\w.]*(?:Error|Exception|Warning|Failure)|error|ERROR|FAILED|FAIL|panic|fatal)"
                    r"\b[^\n]*)$", re.MULTILINE)
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_HASH = re.compile(r"\b[0-9a-f]{7,64}\b")
_TICKET = re.compile(r"\b[A-Z][A-Z0-9]+-\d+\b|(?<![\w&])#\d{2,}\b")
_NUMBER = re.compile(r"(?<![\w.#-])\d[\d,_]*(?:\.\d+)?(?![\w])")
_NAME = re.compile(
    r"(?<![\w.])(?:"
    r"_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*"  # snake_case, CONSTANT_CASE
    r"|__[A-Za-z0-9]+__"  # dunder
    r"|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+"  # camelCase
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+"  # PascalCase of two parts or more
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"  # dotted
    r")(?![\w])"
)
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w{2,})\(")
_QUOTED = re.compile(r"\"([^\"\n]{2,80})\"|(?<![\w'])'([^'\n]{2,80})'(?![\w'])|`([^`\n]{2,80})`")
_TRAIL = ".,;:!?'\")]}>"
_WORD = re.compile(r"[a-z]{1,6}")


def _common(text: str) -> bool:
    return len(text) < 3 or text in STOPLIST


def extract(text: str) -> tuple[str, ...]:
    """The identifiers in `text`, each once, in order of first appearance (rule order within a rule's matches)."""
    if not text:
        return ()
    out: dict[str, None] = {}
    add = out.setdefault
    for m in _URL.finditer(text):
        value = m.group().rstrip(_TRAIL)
        if not _common(value):
            add(value)
    for pattern in (_PATH, _FILE):
        for m in pattern.finditer(text):
            value = m.group().rstrip(_TRAIL)
            if value.count("/") == len(value) or _common(value) or "//" in value:
                continue
            add(value)
    for m in _ERROR.finditer(text):
        add(m.group(1).strip()[:160])
    for m in _UUID.finditer(text):
        add(m.group().lower())
    for m in _HASH.finditer(text):
        value = m.group()
        if not value.isdigit() and not value.isalpha():
            add(value)
    for m in _TICKET.finditer(text):
        add(m.group())
    for m in _NUMBER.finditer(text):
        value = m.group().replace(",", "").replace("_", "")
        digits = sum(c.isdigit() for c in value)
        if digits >= 3 and value.strip("0.") and not value.endswith("."):
            add(value)
    for m in _NAME.finditer(text):
        value = m.group()
        if not _common(value):
            add(value)
    for m in _CALL.finditer(text):
        value = m.group(1)
        if not _common(value + "("):
            add(value)
    for m in _QUOTED.finditer(text):
        value = (m.group(1) or m.group(2) or m.group(3) or "").strip()
        if _common(value) or _WORD.fullmatch(value):
            continue
        add(value)
    return tuple(out)


def _strings(value: Any) -> Iterator[str]:
    """The string values of a tool call's arguments (never its keys), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def message_identifiers(message: Any) -> tuple[str, ...]:
    """The identifiers of a message: its content, then the string values of its tool calls' arguments."""
    parts = [message.content] if message.content else []
    for call in message.tool_calls:
        arguments = call.arguments
        if isinstance(arguments, str):
            try:
                import json

                arguments = json.loads(arguments)
            except ValueError:
                pass
        parts.extend(_strings(arguments))
    if not parts:
        return ()
    if len(parts) == 1:
        return extract(parts[0])
    return extract("\n".join(parts))


__all__ = ["extract", "message_identifiers", "STOPLIST", "FILE_EXTENSIONS"]
