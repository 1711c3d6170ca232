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
from itertools import chain
from typing import Any

FILE_EXTENSIONS = [
    "py", "pyi", "ipynb", "js", "jsx", "ts", "tsx", "mjs", "cjs", "json", "jsonl", "toml", "yaml", "yml", "md", "rst",
    "txt", "cfg", "ini", "conf", "sh", "bash", "zsh", "c", "h", "cc", "cpp", "hpp", "cxx", "go", "rs", "java", "kt",
    "kts", "rb", "php", "cs", "swift", "scala", "sql", "html", "htm", "css", "scss", "vue", "svelte", "lock", "xml",
    "csv", "tsv", "log", "env", "proto", "gradle", "mk", "cmake", "dockerfile", "tf", "lua", "pl", "r", "jl", "ex",
    "exs", "erl", "hs", "ml", "dart", "zig", "nim", "sol",
]

STOPLIST = frozenset([
    "self", "cls", "None", "True", "False", "none", "true", "false", "null", "nil", "undefined", "NaN", "this", "super",
    "args", "kwargs", "e.g", "i.e", "etc", "vs", "a.m", "p.m", "__init__", "__main__", "__name__", "__file__",
    "__dict__", "__class__", "__repr__", "__str__", "print(", "len(", "str(", "int(", "dict(", "list(", "set(",
    "range(", "type(", "isinstance(", "open(", "main(", "test(", "run(", "get(", "set(", "http://", "https://",
    "localhost", "http://localhost", "https://localhost", "www", "utf-8", "utf8", "UTF-8", "ascii",
])

_URL = re.compile(r"https?://[^\s\"'<>`()\[\]{}]+")
_ERROR = re.compile(r"^[ \t]*((?:[\w.]*(?:Error|Exception|Warning|Failure)|error|ERROR|FAILED|FAIL|panic|fatal)"
                    r"\b[^\n]*)$", re.MULTILINE)
_ERROR_WORD = re.compile(r"Error|Exception|Warning|Failure|error|ERROR|FAIL|panic|fatal")
# Every other rule is one of a token's: a run of the characters paths, names, numbers and ids are made of
# (a `(` right after it marks a call). Tokens repeat across a trace: each distinct one is classified once.
_TOKEN = re.compile(r"[\w./@+~#-]+\(?")
_GROUPED = re.compile(r"(?<![\d,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])")  # 12,000 (a comma ends a token)
_PATH = re.compile(r"(?:\.{1,2}/|/|~/)?(?:[\w@+-][\w.@+-]*/)+[\w@+-][\w.@+-]*")
_FILE = re.compile(r"[\w-]+(?:\.[\w-]+)*\.(?:" + "|".join(FILE_EXTENSIONS) + r")", re.IGNORECASE)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HASH = re.compile(r"[0-9a-f]{7,64}")
_TICKET = re.compile(r"[A-Z][A-Z0-9]+-\d+|#\d{2,}")
_NUMBER = re.compile(r"\d[\d_]*(?:\.\d+)?")
_NAME = re.compile(
    r"_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*"  # snake_case, CONSTANT_CASE
    r"|__[A-Za-z0-9]+__"  # dunder
    r"|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+"  # camelCase
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+"  # PascalCase of two parts or more
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"  # dotted
)
_IDENT = re.compile(r"[A-Za-z_]\w{2,}")
_QUOTES = (re.compile(r"\"([^\"\n]{2,80})\""), re.compile(r"'([^'\n]{2,80})'(?![\w'])"),
           re.compile(r"`([^`\n]{2,80})`"))
_TRAIL = ".,;:!?'\")]}>"
_WORD = re.compile(r"[a-z]{1,6}")
_MEMO: dict[str, tuple[str, ...]] = {}  # chunk -> its identifiers (a chunk's are the same wherever it is)
_QUOTED_MEMO: dict[str, str] = {}  # the inside of a quote -> the identifier it is ("" for none)


def _common(text: str) -> bool:
    return len(text) < 3 or text in STOPLIST


def _number(value: str) -> str | None:
    value = value.replace(",", "").replace("_", "")
    digits = sum(c.isdigit() for c in value)
    return value if digits >= 3 and value.strip("0.") and not value.endswith(".") else None


def _classify(token: str) -> tuple[str, ...]:
    """The identifiers one token holds (rule order: path, file, uuid, hash, ticket, number, name, call)."""
    out: list[str] = []
    call = token.endswith("(")
    value = token[:-1] if call else token
    value = value.rstrip(_TRAIL).lstrip("-~#+@.") if not value.startswith(("./", "../", "~/", "#")) else \
        value.rstrip(_TRAIL)
    if not value or _common(value):
        return ()
    if "/" in value:
        if "//" not in value and _PATH.fullmatch(value) and value.strip("/"):
            out.append(value)
            base = value.rsplit("/", 1)[1]
            if _FILE.fullmatch(base) and not _common(base):
                out.append(base)
        return tuple(out)
    if _FILE.fullmatch(value):
        out.append(value)
    if _UUID.fullmatch(value):
        out.append(value.lower())
    elif _HASH.fullmatch(value) and not value.isdigit() and not value.isalpha():
        out.append(value)
    if _TICKET.fullmatch(value):
        out.append(value)
    elif _NUMBER.fullmatch(value):
        number = _number(value)
        if number:
            out.append(number)
    elif _NAME.fullmatch(value) and value not in out:
        out.append(value)
    if call and _IDENT.fullmatch(value) and not _common(value + "(") and value not in out:
        out.append(value)
    return tuple(out)


def _chunk(chunk: str) -> tuple[str, ...]:
    """The identifiers of the tokens of one white-space-free piece of text."""
    tokens = _TOKEN.findall(chunk)
    if len(tokens) == 1 and "," not in chunk:
        return _classify(tokens[0])
    out: dict[str, None] = {}
    for token in tokens:
        for x in _classify(token):
            out[x] = None
    if "," in chunk:  # 12,000: the comma ends a token, so the grouped number is read from the chunk
        for m in _GROUPED.finditer(chunk):
            number = _number(m.group())
            if number:
                out[number] = None
    return tuple(out)


def extract(text: str) -> tuple[str, ...]:
    """The identifiers in `text`, each once, in order: URLs, error lines, then the tokens' (paths, file names,
    hashes, ids, numbers, names, calls) in order of first appearance, then quoted strings."""
    if not text:
        return ()
    out: dict[str, None] = {}
    add = out.setdefault
    if "://" in text:
        for m in _URL.finditer(text):
            value = m.group().rstrip(_TRAIL)
            if not _common(value):
                add(value)
    last = -1
    for word in _ERROR_WORD.finditer(text):  # an error word; then its line, when the line starts with it
        start = text.rfind("\n", 0, word.start()) + 1
        if start == last:
            continue
        last = start
        end = text.find("\n", start)
        found = _ERROR.match(text[start:] if end < 0 else text[start:end])
        if found:
            add(found.group(1).strip()[:160])
    memo = _MEMO
    if len(memo) > 1_000_000:
        memo.clear()
    chunks = list(dict.fromkeys(text.split()))  # no token spans white space: each distinct chunk's tokens, once
    held: list[tuple[str, ...] | None] = list(map(memo.get, chunks))  # known chunks looked up in C
    if None in held:
        for i, known in enumerate(held):
            if known is None:
                held[i] = memo[chunks[i]] = _chunk(chunks[i])
    out.update(dict.fromkeys(chain.from_iterable(held)))  # type: ignore[arg-type]
    quoted = _QUOTED_MEMO
    if len(quoted) > 1_000_000:
        quoted.clear()
    for n, pattern in enumerate(_QUOTES):
        if pattern.pattern[0] not in text:
            continue
        if n == 1:  # a single quote after a letter is an apostrophe, not a quote
            values = [m.group(1) for m in pattern.finditer(text)
                      if not m.start() or not (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_'")]
        else:
            values = pattern.findall(text)
        for raw in dict.fromkeys(values):
            inner = quoted.get(raw)
            if inner is None:
                inside = raw.strip()
                inner = quoted[raw] = "" if _common(inside) or _WORD.fullmatch(inside) else inside
            if inner:
                add(inner)
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


__all__ = ["FILE_EXTENSIONS", "STOPLIST", "extract", "message_identifiers"]
