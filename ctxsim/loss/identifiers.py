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
  2 to 80 characters, stripped (each rule is tried only where the text holds its quote
  character: `_QUOTE_GATES`).

Every rule matches inside one line, so `extract` works line by line: each distinct line is
classified once per process (`_LINE`, `_SPECIAL`; bounded) and the lines' identifiers are put
back in the order the rules give over the whole text (`reference_extract`, held equal by tests).

Too common to mean anything, and so excluded: `STOPLIST` (`self`, `None`, `true`, `e.g`,
`__init__` ...), numbers that are all zeros, quoted strings that are one short lower-case word
(`"name"`, `'yes'`: JSON keys and prose), and anything shorter than 3 characters. The same text
always gives the same identifiers, in order of first appearance (`extract`), with no duplicates.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from itertools import accumulate, chain
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
_QUOTE_CHARS = '"\'`'
# `reference_extract` and `extract` try `_QUOTES[n]` only where the text holds its quote character (a cheap test;
# until this was the character, the double-quote rule's gate was its pattern's leading backslash, so `"..."` was
# read only in a text that held a backslash)
_QUOTE_GATES = tuple(_QUOTE_CHARS)
_TRAIL = ".,;:!?'\")]}>"
_WORD = re.compile(r"[a-z]{1,6}")
_MEMO: dict[str, tuple[str, ...]] = {}  # chunk -> its identifiers (a chunk's are the same wherever it is)
_TOKENS: dict[str, tuple[str, ...]] = {}  # token -> its identifiers
_QUOTED_MEMO: dict[str, str] = {}  # the inside of a quote -> the identifier it is ("" for none)
_LINE: dict[str, tuple[str, ...]] = {}  # line -> its tokens' identifiers (a line's are the same wherever it is)
Special = tuple[tuple[str, ...], ...]  # a line's URLs, error line, double-, single- and back-quoted strings
_SPECIAL: dict[str, Special] = {}  # line -> those, only for a line that has any
_BY_LINE: dict[str, tuple[str, ...]] = {}  # line -> `extract(line)` (extract_by_line)
_MET: set[str] = set()  # lines met in a text read whole (kept in `_LINE` when met again)
LINE_MEMO_CHARS = 2_000  # longer lines are classified each time they are met (a long line seldom repeats)
LINE_MEMO_ENTRIES = 500_000
LINE_MEMO_TOTAL_CHARS = 32_000_000  # each line memo is emptied once its lines pass this many characters in all
_KEPT = {"line": 0, "by_line": 0, "met": 0}  # characters of the lines each memo holds (about)


def _room(memo: dict[str, Any] | set[str], name: str, lines: list[str]) -> None:
    """Empty `memo` (and `_SPECIAL` with `_LINE`) first when `lines` would take it past its bounds."""
    size = sum(map(len, lines))
    if len(memo) > LINE_MEMO_ENTRIES or _KEPT[name] + size > LINE_MEMO_TOTAL_CHARS:
        memo.clear()
        if memo is _LINE:
            _SPECIAL.clear()
        _KEPT[name] = 0
    _KEPT[name] += size


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
            if "." in base and _FILE.fullmatch(base) and not _common(base):
                out.append(base)
        return tuple(out)
    # each rule tried only where it could match (a cheap test first: a file name has a dot, a uuid 36 characters,
    # a hash 7 to 64, a ticket a dash or a leading #, a number a leading digit)
    size = len(value)
    if "." in value and _FILE.fullmatch(value):
        out.append(value)
    if size == 36 and _UUID.fullmatch(value):
        out.append(value.lower())
    elif 7 <= size <= 64 and _HASH.fullmatch(value) and not value.isdigit() and not value.isalpha():
        out.append(value)
    if ("-" in value or value[0] == "#") and _TICKET.fullmatch(value):
        out.append(value)
    elif value[0].isdigit() and _NUMBER.fullmatch(value):
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
    memo = _TOKENS
    if len(memo) > 1_000_000:
        memo.clear()
    if len(tokens) == 1 and "," not in chunk:
        found = memo.get(tokens[0])
        if found is None:
            found = memo[tokens[0]] = _classify(tokens[0])
        return found
    out: dict[str, None] = {}
    for token in tokens:
        found = memo.get(token)
        if found is None:
            found = memo[token] = _classify(token)
        for x in found:
            out[x] = None
    if "," in chunk:  # 12,000: the comma ends a token, so the grouped number is read from the chunk
        for m in _GROUPED.finditer(chunk):
            number = _number(m.group())
            if number:
                out[number] = None
    return tuple(out)


def _new_lines(lines: list[str]) -> tuple[list[tuple[str, ...]], list[Special | None]]:
    """Lines not met before: each one's token identifiers, and its URLs, error line and quoted strings (None: it has
    none); kept in `_LINE` and `_SPECIAL` (unless long). Every rule matches inside one line, so a text's
    identifiers are its lines': the rules read the lines all at once, joined, and each match goes to its line."""
    memo = _MEMO
    if len(memo) > 1_000_000:
        memo.clear()
    pieces = [line.split() for line in lines]  # no token spans white space
    for chunk in set(chain.from_iterable(pieces)).difference(memo):  # each distinct new chunk classified once
        memo[chunk] = _chunk(chunk)
    get = memo.__getitem__
    ids = [tuple(dict.fromkeys(chain.from_iterable(map(get, chunks)))) for chunks in pieces]
    specials: list[Special | None] = [None] * len(lines)
    block = lines[0] if len(lines) == 1 else "\n".join(lines)
    found: dict[int, list[list[str]]] = {}  # line -> [URLs, error, double-, single-, back-quoted]
    starts: list[int] = []

    def line_at(at: int) -> int:
        if not starts:
            starts.extend(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
        return bisect_right(starts, at) - 1

    def add(at: int, rule: int, value: str) -> None:
        entry = found.get(at)
        if entry is None:
            entry = found[at] = [[], [], [], [], []]
        entry[rule].append(value)

    if "://" in block:
        for m in _URL.finditer(block):
            value = m.group().rstrip(_TRAIL)
            if not _common(value):
                add(line_at(m.start()), 0, value)
    last = -1
    for word in _ERROR_WORD.finditer(block):  # an error word; then its line, when the line starts with it
        at = line_at(word.start())
        if at == last:
            continue
        last = at
        error = _ERROR.match(lines[at])
        if error:
            add(at, 1, error.group(1).strip()[:160])
    for n, pattern in enumerate(_QUOTES):
        if _QUOTE_CHARS[n] not in block:
            continue
        for m in pattern.finditer(block):
            start = m.start()
            if n == 1 and start and (block[start - 1].isalnum() or block[start - 1] in "_'"):
                continue  # a single quote after a letter is an apostrophe, not a quote
            inner = _inner(m.group(1))
            if inner:
                add(line_at(start), 2 + n, inner)
    for at, entry in found.items():
        specials[at] = tuple(tuple(dict.fromkeys(values)) for values in entry)
    lines_memo = _LINE
    _room(lines_memo, "line", lines)
    for line, own, special in zip(lines, ids, specials, strict=True):
        if len(line) <= LINE_MEMO_CHARS:
            lines_memo[line] = own
            if special is not None:
                _SPECIAL[line] = special
    return ids, specials


def _inner(raw: str) -> str:
    """The identifier a quoted string is ("" for none)."""
    quoted = _QUOTED_MEMO
    inner = quoted.get(raw)
    if inner is None:
        if len(quoted) > 1_000_000:
            quoted.clear()
        inside = raw.strip()
        inner = quoted[raw] = "" if _common(inside) or _WORD.fullmatch(inside) else inside
    return inner


def _lines_of(text: str) -> tuple[list[str], list[tuple[str, ...]], list[Special | None]] | None:
    """Of each distinct line of `text` in order: its token identifiers, and its URLs, error line and quoted strings
    (None where it has none). None when most of its lines were never met before: the text is read whole then
    (`reference_extract`: a line is worth keeping once it is met again), and its lines are remembered as met."""
    lines = list(dict.fromkeys(text.split("\n"))) if "\n" in text else [text]
    held: list[tuple[str, ...] | None] = list(map(_LINE.get, lines))  # known lines looked up in C
    specials: list[Special | None] = list(map(_SPECIAL.get, lines))
    if None in held:
        new = [i for i, known in enumerate(held) if known is None]
        fresh = [lines[i] for i in new]
        met = _MET
        if 4 * (len(lines) - len(new) + len(met.intersection(fresh))) < len(lines):  # mostly never met
            _room(met, "met", fresh)
            met.update(fresh)
            return None
        for i, own, special in zip(new, *_new_lines(fresh), strict=True):
            held[i] = own
            specials[i] = special
    return lines, held, specials  # type: ignore[return-value]


def extract(text: str) -> tuple[str, ...]:
    """The identifiers in `text`, each once, in order: URLs, error lines, then the tokens' (paths, file names,
    hashes, ids, numbers, names, calls) in order of first appearance, then quoted strings.

    Worked out line by line (no rule matches across a line; each distinct line is classified once, `_LINE`) and put
    back in that order: `reference_extract`, the same rules over the whole text at once, gives the same."""
    if not text:
        return ()
    known = _lines_of(text)
    if known is None:
        return reference_extract(text)
    _, held, every = known
    specials: list[Special] = list(filter(None, every))
    if not specials:
        if len(held) == 1:
            return held[0]
        return tuple(dict.fromkeys(chain.from_iterable(held)))
    out: dict[str, None] = {}
    for rule in (0, 1):  # URLs, then error lines
        out.update(dict.fromkeys(chain.from_iterable(s[rule] for s in specials)))
    out.update(dict.fromkeys(chain.from_iterable(held)))
    for n, gate in enumerate(_QUOTE_GATES):  # quoted: double, single, back quotes
        if gate in text:
            out.update(dict.fromkeys(chain.from_iterable(s[2 + n] for s in specials)))
    return tuple(out)


def extract_by_line(text: str) -> tuple[str, ...]:
    """Each distinct line's identifiers (`extract` of the line) one line after another, each identifier once (for a
    long text whose order does not matter). The same as `extract(text)` but for the order."""
    if not text:
        return ()
    lines = list(dict.fromkeys(text.split("\n"))) if "\n" in text else [text]
    held = identifiers_of_lines(lines)
    if len(held) == 1:
        return held[0]
    return tuple(dict.fromkeys(chain.from_iterable(held)))


def identifiers_of_lines(lines: list[str]) -> list[tuple[str, ...]]:
    """`extract(line)` of each of `lines` (each holding no line break): the lines never met classified together."""
    memo = _BY_LINE
    held: list[tuple[str, ...] | None] = list(map(memo.get, lines))
    if None in held:
        new = [i for i, known in enumerate(held) if known is None]
        fresh = [lines[i] for i in new]  # classified together (`_new_lines`), then each put as `extract(line)` puts it
        _room(memo, "by_line", fresh)
        for i, line, tokens, special in zip(new, fresh, *_new_lines(fresh), strict=True):
            own = tokens if special is None else tuple(dict.fromkeys(chain(special[0], special[1], tokens, *(
                special[2 + n] for n, gate in enumerate(_QUOTE_GATES) if gate in line))))
            held[i] = own
            if len(line) <= LINE_MEMO_CHARS:
                memo[line] = own
    return held  # type: ignore[return-value]


def reference_extract(text: str) -> tuple[str, ...]:
    """`extract` over the whole text at once, as the rules read (the reference `extract` is held equal to by the
    tests)."""
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
        if _QUOTE_CHARS[n] not in text:
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


def forget() -> None:
    """Let go of every chunk, line and quote classified so far (a process starts with none)."""
    for memo in (_MEMO, _TOKENS, _QUOTED_MEMO, _LINE, _SPECIAL, _BY_LINE, _MET):
        memo.clear()
    for name in _KEPT:
        _KEPT[name] = 0


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


def message_text(message: Any) -> str:
    """What the rules read of a message: its content, then the string values of its tool calls' arguments, a line
    break between each ("" for none)."""
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
    if len(parts) == 1:
        return parts[0]  # type: ignore[no-any-return]
    return "\n".join(parts)


def message_identifiers(message: Any) -> tuple[str, ...]:
    """The identifiers of a message: its content, then the string values of its tool calls' arguments."""
    text = message_text(message)
    return extract(text) if text else ()


def extract_many(texts: list[str]) -> list[tuple[str, ...]]:
    """`extract` of each of `texts`; the lines of them all that were never met are classified first, together (one
    reading of the rules for all: a text then puts together the identifiers of lines already known)."""
    known = _LINE
    fresh = [line for line in dict.fromkeys(chain.from_iterable(text.split("\n") for text in texts))
             if line not in known and len(line) <= LINE_MEMO_CHARS]
    if fresh:
        _new_lines(fresh)
    return [extract(text) if text else () for text in texts]


__all__ = ["FILE_EXTENSIONS", "STOPLIST", "extract", "extract_by_line", "extract_many", "forget",
           "identifiers_of_lines", "message_identifiers", "message_text", "reference_extract"]
