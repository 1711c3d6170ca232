"""Exact offline tokenizers: counts match tiktoken's reference values with no network."""

from __future__ import annotations

import socket

import pytest

from ctxsim.errors import CtxsimError
from ctxsim.tokens import TokenCounter, bpe, get_tokenizer


def test_o200k_reference_ids_offline(tmp_path, monkeypatch):
    # An empty tiktoken cache and no network: the encoding must come from the shipped ranks.
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(OSError, match="network disabled in tests"):
        socket.create_connection(("127.0.0.1", 9))
    enc = bpe.encoding("o200k_base")
    # Reference ids published for tiktoken's o200k_base and cl100k_base.
    assert enc.encode("hello world") == [24912, 2375]
    assert bpe.encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert list(tmp_path.iterdir()) == []  # nothing was downloaded or cached


def test_known_counts():
    o200k = get_tokenizer("o200k_base")
    cl100k = get_tokenizer("cl100k_base")
    # cl100k: tiktoken's README example "tiktoken is great!" is 6 tokens.
    assert cl100k.count_batch(["tiktoken is great!"]) == [6]
    assert o200k.count_batch(["hello world", ""]) == [2, 0]
    # Special-token text in a trace is ordinary text, never an error.
    assert o200k.count_batch(["<|endoftext|>"])[0] > 1


def test_rank_file_hash_is_checked():
    with pytest.raises(CtxsimError, match="SHA-256"):
        bpe.load_ranks("o200k_base", "0" * 64)


def test_estimators():
    assert get_tokenizer("chars4").count_batch(["abcde", "", "abcd"]) == [2, 0, 1]
    # bytes4 counts UTF-8 bytes: "é" is 2 bytes.
    assert get_tokenizer("bytes4").count_batch(["ééé"]) == [2]
    assert not get_tokenizer("chars4").exact and get_tokenizer("o200k_base").exact


def test_counter_counts_each_distinct_text_once():
    calls: list[list[str]] = []

    class Spy:
        name = "spy"
        exact = False

        def count_batch(self, texts):
            calls.append(list(texts))
            return [len(t) for t in texts]

    counter = TokenCounter(Spy())
    counter.prime(["a", "bb", "a", "ccc", "bb"])
    assert calls == [["a", "bb", "ccc"]]
    assert counter.count("bb") == 2 and counter.count("a") == 1
    assert calls == [["a", "bb", "ccc"]]
    assert counter.count("dddd") == 4
    assert counter.distinct_texts == 4


def test_unknown_tokenizer():
    with pytest.raises(CtxsimError, match="unknown tokenizer"):
        get_tokenizer("gpt2-ish")


def test_tool_call_arguments_json_is_made_once_and_follows_replace():
    import json
    from dataclasses import replace

    from ctxsim.model import ToolCall

    call = ToolCall("c1", "edit", {"path": "src/é.py", "n": [1, 2]})
    text = call.arguments_json
    assert text == json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))
    assert call.arguments_json is text  # kept, not made again
    assert replace(call, arguments={}).arguments_json == "{}"  # a copy with other arguments: its own
    assert ToolCall("c2", "x", '{"raw": 1}').arguments_json == '{"raw": 1}' and ToolCall("c3", "x").arguments_json == ""
    assert call == ToolCall("c1", "edit", {"path": "src/é.py", "n": [1, 2]})  # the kept text is not compared
