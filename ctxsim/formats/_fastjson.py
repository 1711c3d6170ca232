"""JSON lines decoded by orjson where it is installed, with exactly the stdlib's results.

orjson decodes a JSONL line 2-3x faster than `json.loads` (JSON decoding was 15-18 % of `inspect`'s
accounting; orjson against msgspec and the stdlib measured in benchmarks/bench_speed.py's notes). It
gives the same objects for every line it accepts except one case: an integer too big for 64 bits, which
it turns into a float; such a line (any run of 19 digits or more, strings included) is left to the
stdlib. Whatever orjson refuses (a byte-order mark, NaN, a lone surrogate escape, broken JSON, invalid
UTF-8) is left to the stdlib too, which accepts it or says what is wrong in its own words.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_loads: Callable[[bytes], Any] | None
try:
    from orjson import JSONDecodeError as _Refused
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib reads everything alone
    _loads = None

REFUSED = object()  # the line is the stdlib's to read
_LONG_NUMBER = re.compile(rb"\d{19}")


def fast_loads(raw: bytes) -> Any:
    """The decoded line, or REFUSED."""
    if _loads is None or _LONG_NUMBER.search(raw) is not None:
        return REFUSED
    try:
        return _loads(raw)
    except _Refused:
        return REFUSED
