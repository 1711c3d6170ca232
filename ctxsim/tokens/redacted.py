"""Redacted text sized by its marker: `[REDACTED_TEXT len=N sha=...]` stands for N characters.

Some published or sanitised logs replace every free text with a marker that keeps the original's
length (the Codex Desktop rollouts a sanitiser wrote: `REDACTED_TEXT` for base instructions, user,
developer and assistant messages, `REDACTED_ARGUMENTS` / `REDACTED_INPUT` for tool calls,
`REDACTED_OUTPUT` for tool results, `REDACTED_MESSAGE` for event copies). Every such kind is sized;
`REDACTED_ENCRYPTED_CONTENT` is not: its length is the ciphertext's, and what it stands for
(reasoning) is billed as the reasoning tokens the usage records.

The provider was billed for the text, not the marker: counted as written, a 13,000-character system
prompt would weigh 15 tokens. `TokenCounter` counts a text holding markers as the text around them
plus, per marker, N / CHARS_PER_TOKEN tokens rounded up: the length the marker keeps, at the usual
rule of thumb for the BPE tokenizers (OpenAI's tokenizer guide: about 4 characters a token). The
content is unknown, so this is an estimate: a calibration on such a log widens its scale bounds by
SCALE_SPAN (calibrate.py) and its fit and re-anchors correct what the estimate gets wrong in aggregate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator

from ctxsim.model import Session

CHARS_PER_TOKEN = 4
_MARKER = re.compile(r"\[REDACTED_(?!ENCRYPTED)[A-Z_]+ len=(\d+) sha=[0-9A-Za-z]*\]")
_PREFIX = "[REDACTED_"


def split_markers(text: str) -> tuple[str, int]:
    """(the text with its markers taken out, the tokens the markers stand for); (text, 0) without any."""
    if _PREFIX not in text:
        return text, 0
    sizes = [int(n) for n in _MARKER.findall(text)]
    if not sizes:
        return text, 0
    return _MARKER.sub("", text), sum(math.ceil(n / CHARS_PER_TOKEN) for n in sizes)


def redacted_tokens(text: str) -> int:
    """The tokens the markers in `text` stand for (0 without any)."""
    return split_markers(text)[1]


# A redacted text's characters per token is unknown: between 3 (code, JSON) and about 5.3 (plain prose)
# where the estimate takes 4. A calibration on a log holding markers widens its scale bounds by this much.
SCALE_SPAN = (0.75, 4 / 3)


def marker_count(texts: Iterable[str]) -> int:
    """How many sized markers the texts hold."""
    return sum(len(_MARKER.findall(t)) for t in texts if _PREFIX in t)


def session_texts(session: Session) -> Iterator[str]:
    """Every text of a session a marker may stand in: system prompt, messages, thinking, tool calls."""
    if session.system:
        yield session.system
    for m in session.messages:
        yield m.content
        if m.thinking:
            yield m.thinking
        for call in m.tool_calls:
            yield call.arguments_json
