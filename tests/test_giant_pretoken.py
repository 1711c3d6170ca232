"""One giant pre-token (a long line of letters, no space) is counted in small pieces: at the BPE's speed."""

from __future__ import annotations

import random

from ctxsim.tokens import bpe, get_tokenizer


def _letters(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=n))


def test_a_giant_pre_token_is_cut_in_small_pieces_that_add_up_to_it():
    text = _letters(2 * bpe.LONG_CHARS + 123, 1)
    parts, exact = bpe.chunks(text)
    assert not exact
    assert "".join(parts) == text
    # the stretches with no exact cut go in GIANT_CHARS pieces (the rest, at the end, is bounded as before)
    assert all(len(p) <= bpe.GIANT_CHARS for p in parts[:-1])
    assert len(parts[-1]) <= bpe.LONG_CHARS


def test_a_giant_pre_token_counts_within_a_token_per_cut():
    tokenizer = get_tokenizer("o200k_base")
    text = _letters(bpe.LONG_CHARS + bpe.GIANT_CHARS * 3 + 7, 2)
    parts, _ = bpe.chunks(text)
    (n,) = tokenizer.count_batch([text])
    whole = len(bpe.encoding("o200k_base").encode_ordinary(text))
    assert abs(n - whole) <= len(parts)
    assert len(parts) >= bpe.LONG_CHARS // bpe.GIANT_CHARS
