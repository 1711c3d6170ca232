"""JSON lines decoded by msgspec where it is installed, with exactly the stdlib's results.

msgspec decodes a JSONL line 2x faster than `json.loads` (on the real Claude Code samples: 27 ms against
57 ms for 7.6 MB; orjson, 21 ms, turns integers past 64 bits into floats, and the scan that would catch
them cost more than it saved). For every line it accepts msgspec gives the stdlib's objects: keys in the
same order (a repeated key's last value), integers of any size, the same floats. Whatever it refuses (a
byte-order mark, NaN or Infinity, an out-of-range float, a lone surrogate escape, broken JSON, invalid
UTF-8, nesting too deep) is left to the stdlib, which accepts it or says what is wrong in its own words.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

REFUSED = object()  # the line is the stdlib's to read

_decode: Callable[[bytes], Any] | None
try:
    from msgspec import DecodeError as _Refused
    from msgspec.json import Decoder
except ImportError:  # pragma: no cover - msgspec is a dependency; the stdlib reads everything alone
    _decode = None
else:
    _decode = Decoder().decode


def fast_loads(raw: bytes) -> Any:
    """The decoded line, or REFUSED."""
    if _decode is None:
        return REFUSED
    try:
        return _decode(raw)
    except (_Refused, RecursionError):  # nested deeper than msgspec goes: the stdlib's verdict
        return REFUSED
