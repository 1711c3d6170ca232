"""What kind of identifier a string is, and what a miss of it weighs.

The extraction rules (`identifiers`) find paths, URLs, error lines, hashes, ids, numbers, names and
quoted strings. Not all say the same about what the agent lost: a path, a symbol, an error line, a
URL or a command names something it could not make up; a bare number (`276`, `0.15`) or a unit
(`KiB`, `ms`, `12MB`) is mostly a measurement it reads again anyway, so these are discounted to
nothing (never a recall miss). Text a log's author redacted or hashed (`[REDACTED_TEXT len=161
sha=...]`, ctxsim's own `[REDACTED:rule]`) holds no identifier at all: what it hid cannot be known.
"""

from __future__ import annotations

import re
import zlib
from functools import lru_cache

from ctxsim.loss.identifiers import FILE_EXTENSIONS, reference_extract

REDACTION = re.compile(r"\[(?:REDACTED|HASHED|SANITI[SZ]ED)[^\]\n]{0,120}\]")
UNITS = frozenset([
    "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB", "kB", "Kb", "Mb", "Gb", "ms", "us", "ns", "µs", "sec", "secs",
    "min", "mins", "hrs", "px", "em", "rem", "pt", "fps", "rpm", "MHz", "GHz", "kHz", "Hz", "tok", "toks", "LOC",
])
_NUMERIC = re.compile(r"[+-]?[\d][\d.,_]*%?")
_MEASURE = re.compile(r"[+-]?\d[\d.,_]*\s?(?:[A-Za-zµ]{1,4}|%)")
_URL = re.compile(r"https?://")
_ERROR = re.compile(r"^(?:[\w.]*(?:Error|Exception|Warning|Failure)|error|ERROR|FAILED|FAIL|panic|fatal)\b")
_HEX = re.compile(r"[0-9a-fA-F-]{7,64}")
_COMMAND = re.compile(r"^(?:git|npm|pip|python3?|pytest|cargo|go|make|mix|bd|uv|yarn|pnpm|docker|ls|cd|rg|grep)\s")

_EXTENSIONS = frozenset(FILE_EXTENSIONS)
WEIGHTS = {"path": 1.0, "url": 1.0, "error": 1.0, "symbol": 1.0, "command": 1.0, "hash": 0.5, "quoted": 0.5,
           "ticket": 1.0, "number": 0.0, "unit": 0.0}


# The share of the identifiers the agent had used (an answer before the compaction held them) that a product's
# model summary keeps word for word, by kind: measured on two Claude Code 2.1.x manual compactions (the recorded
# summary against the part it replaced): paths 50 % and 37 %, error lines 2 of 3, tickets 2 of 3, symbols 11 % and
# 22 %, quoted strings 12 % and 20 %, URLs 0 of 5, commands 0 of 1.
RETAINED = {"path": 0.45, "error": 0.65, "ticket": 0.65, "hash": 0.5, "symbol": 0.2, "quoted": 0.15, "url": 0.0,
            "command": 0.0, "number": 0.0, "unit": 0.0}


def kept_by_summary(identifier: str) -> bool:
    """Whether a model summary keeps this identifier it had used: the kind's `RETAINED` share of them, chosen by a
    digest of the identifier (the same one kept in every run and process)."""
    share = RETAINED[kind(identifier)]
    return share > 0 and zlib.crc32(identifier.encode("utf-8", "surrogatepass")) % 1000 < share * 1000


# What a miss weighs toward re-fetching its source: a path, an error line, a URL, a command or a ticket names what
# the agent goes back for; a symbol or a quoted string alone is often recalled or written anew, two of them are not.
REFETCH_WEIGHTS = {"path": 1.0, "url": 1.0, "error": 1.0, "command": 1.0, "ticket": 1.0, "hash": 0.5, "symbol": 0.5,
                   "quoted": 0.5, "number": 0.0, "unit": 0.0}


def refetch_weight(identifier: str) -> float:
    return REFETCH_WEIGHTS[kind(identifier)]


MARKER_HEADS = ("[REDACTED", "[HASHED", "[SANITISED", "[SANITIZED")  # how a `REDACTION` marker starts


def has_marker(text: str) -> bool:
    """Whether `text` holds a redaction marker (substring tests first: most texts hold none)."""
    return any(head in text for head in MARKER_HEADS) and REDACTION.search(text) is not None


@lru_cache(maxsize=1 << 16)
def kind(identifier: str) -> str:
    """The kind of an identifier the rules found: path, url, error, command, hash, ticket, number, unit, symbol or
    quoted."""
    if _URL.match(identifier):
        return "url"
    if _ERROR.match(identifier):
        return "error"
    if _NUMERIC.fullmatch(identifier):
        return "number"
    if identifier in UNITS or _MEASURE.fullmatch(identifier):
        return "unit"
    if " " in identifier:
        return "command" if _COMMAND.match(identifier) else "quoted"
    if "/" in identifier or ("." in identifier and identifier.rsplit(".", 1)[1].lower() in _EXTENSIONS):
        return "path"
    if _HEX.fullmatch(identifier) and any(c.isdigit() for c in identifier):
        return "hash"
    if re.fullmatch(r"[A-Z][A-Z0-9]+-\d+|#\d{2,}", identifier):
        return "ticket"
    return "symbol"


def weight(identifier: str) -> float:
    """What a miss of it counts: 1 for what the agent could not make up, 0 for numbers and units."""
    return WEIGHTS[kind(identifier)]


def discounted(identifier: str) -> bool:
    """Never a recall miss: a bare number or a unit."""
    return weight(identifier) == 0.0


def redacted_identifiers(text: str) -> set[str]:
    """The identifiers the rules would find inside the redaction markers of `text` (none when it has none)."""
    if not has_marker(text):
        return set()
    markers = REDACTION.findall(text)
    if not markers:
        return set()
    return set(reference_extract("\n".join(markers)))


__all__ = ["REDACTION", "REFETCH_WEIGHTS", "RETAINED", "UNITS", "WEIGHTS", "discounted", "has_marker",
           "kept_by_summary", "kind", "redacted_identifiers", "refetch_weight", "weight"]
