"""Long texts are counted in bounded chunks, and the count stays exact (o200k_base, cl100k_base).

A text longer than `bpe.LONG_CHARS` is cut only where the pre-tokenizer starts a pre-token anyway (see
`bpe._CUT`), so the sum of the chunks' counts is tiktoken's count of the whole. Checked on texts built to
be adversarial: runs of spaces, tabs and newlines, digits, punctuation, "/" after newlines, CJK, letters
with marks, both with the real chunk size (texts of a few hundred KB) and with a tiny one (a cut every few
characters, so that every kind of boundary is met many times). Only a stretch with no such cut (one giant
pre-token) is cut elsewhere, and then the tokenizer says the count is an estimate.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxsim.tokens import bpe, get_tokenizer

ENCODINGS = ("o200k_base", "cl100k_base")

# Pieces that meet at every kind of boundary the pre-tokenizers know.
ATOMS = [
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\n ", "\n/", "/", "//", "-", "\n-", ".", ".\n", ",",
    "'s", "'S", "'ll", "'", "\"", "=", "==", "(", ")", "{", "}", "#", "$", "\u00a0", "\u3000", "\u2028", "\x1c",
    "a", "ab", "Hello", "WORLD", "camelCase", "x1", "1", "12", "123", "1234", "4567890", "\u0663\u0664",
    "中", "中文字符", "日本語", "한국어", "é", "e\u0301", "\u0301", "ǅ", "Ωμέγα", "😀", "👍🏽", "\u200b", "\ufeff",
]


def _whole(name: str, text: str) -> int:
    return len(get_tokenizer(name)._encoding.encode_ordinary(text))  # type: ignore[attr-defined]


def _adversarial(seed: int, size: int) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    n = 0
    while n < size:
        r = rng.random()
        if r < 0.05:
            piece = rng.choice([" ", "\t", "\n", "7", "=", "中", "a"]) * rng.randint(50, 5000)  # long runs
        else:
            piece = rng.choice(ATOMS)
        out.append(piece)
        n += len(piece)
    return "".join(out)


@pytest.mark.parametrize("name", ENCODINGS)
def test_real_chunk_size_counts_as_the_whole_text(name):
    """Texts of 300-700 KB, each cut into several chunks: the count is tiktoken's count of the whole."""
    tokenizer = get_tokenizer(name)
    rng = random.Random(2)
    texts = [
        _adversarial(1, 300_000),
        "x" * 1000 + " " * 120_000 + "y" * 100_000 + "\n" * 150_000 + "z",  # long runs, few cut points
        "".join(rng.choice("0123456789 ") for _ in range(400_000)),  # digits and spaces
        "中文字符、日本語。" * 40_000,  # CJK with no space or newline: cut only where it must be
        ("def f(x):\n    return x / 2\n//comment\n" * 12_000),  # code, "/" after newlines
        "word " * 140_000,
    ]
    for text in texts:
        assert len(text) > bpe.LONG_CHARS
    before = tokenizer.estimated_texts
    counts = tokenizer.count_batch(texts)
    exact = [t for t in texts if bpe.chunks(t)[1]]
    for text, n in zip(texts, counts, strict=True):
        if bpe.chunks(text)[1]:
            assert n == _whole(name, text)
    # all but the CJK text (no space, no newline) are cut exactly; the CJK one is marked as an estimate
    assert len(exact) == len(texts) - 1
    assert tokenizer.estimated_texts == before + 1
    assert len(bpe.chunks(texts[0])[0]) >= 2  # really cut


@pytest.mark.parametrize("name", ENCODINGS)
def test_tiny_chunks_cut_at_every_kind_of_boundary_and_stay_exact(name, monkeypatch):
    monkeypatch.setattr(bpe, "CHUNK_CHARS", 8)
    monkeypatch.setattr(bpe, "LONG_CHARS", 16)
    tokenizer = get_tokenizer(name)
    for seed in range(40):
        text = _adversarial(seed, 3000)
        parts, exact = bpe.chunks(text)
        assert "".join(parts) == text
        assert all(len(p) <= 16 for p in parts)
        if exact:
            assert sum(_whole(name, p) for p in parts) == _whole(name, text), seed
            assert tokenizer.count_batch([text]) == [_whole(name, text)]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(ATOMS), min_size=1, max_size=60))
def test_every_cut_the_rule_allows_is_exact(atoms):
    """Property: cutting at any (not only the chosen) place `_CUT` allows keeps the count, both encodings."""
    text = "".join(atoms)
    cuts = [m.start() for m in bpe._CUT.finditer(text) if 0 < m.start() < len(text)]
    for name in ENCODINGS:
        whole = _whole(name, text)
        for cut in cuts:
            assert _whole(name, text[:cut]) + _whole(name, text[cut:]) == whole, (name, text, cut)


def test_the_rule_would_catch_a_wrong_cut():
    """The check itself: cutting inside a pre-token (a newline before "/", "_" before a newline, a word, a
    run of spaces) changes the count, and the rule allows none of these cuts."""
    name = "o200k_base"
    for text, cut in (("x;\n//c", 3), ("ab_\ncd", 3), ("Hello", 2), ("a      b", 4)):
        assert _whole(name, text[:cut]) + _whole(name, text[cut:]) != _whole(name, text)
        assert cut not in [m.start() for m in bpe._CUT.finditer(text)]


def test_one_giant_piece_is_counted_in_bounded_pieces_and_marked_an_estimate():
    tokenizer = get_tokenizer("o200k_base")
    text = "a" * (3 * bpe.LONG_CHARS + 5)
    parts, exact = bpe.chunks(text)
    assert not exact
    assert max(map(len, parts)) <= bpe.LONG_CHARS
    before = tokenizer.estimated_texts
    (n,) = tokenizer.count_batch([text])
    assert tokenizer.estimated_texts == before + 1
    whole = _whole("o200k_base", text)
    assert abs(n - whole) <= len(parts)  # within a token per cut


def test_a_million_spaces_is_counted_not_a_panic():
    """tiktoken's regex overflows its stack on a run of about a million spaces (a Rust panic); cut, it counts."""
    tokenizer = get_tokenizer("cl100k_base")
    (n,) = tokenizer.count_batch([" " * 1_200_000 + "x"])
    assert 0 < n < 1_200_000 // 100
