"""Issue 17, content-dependent scale: file content and the rest counted at different weights, and the
DeepSeek prior (its chat encodings' framing).

Counted with chars4 (a token is 4 characters, rounded up); every recorded prompt is made by hand from a
stated rule, so fitted values and prompts are checked against it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from ctxsim.analysis import calibrate
from ctxsim.analysis.calibrate import calibration, token_prior
from ctxsim.analysis.validate import validate
from ctxsim.model import Message, Session, ToolCall, Trace, Usage, format_ts
from ctxsim.tokens import TokenCounter, counting, get_tokenizer
from ctxsim.tokens.counting import Framing, MessageSizer, is_file_text, tool_key

T0 = 1_768_323_360.0  # 2026-01-13T16:56:00Z
PREFIX = 4_000


def sizer(framing: Framing | None = None) -> MessageSizer:
    return MessageSizer(TokenCounter(get_tokenizer("chars4")), framing)


# ---------------------------------------------------------------- the classifier's rule


def numbered(lines: int, gutter: str = "→") -> str:
    return "\n".join(f"{i:6d}{gutter}x = {i}" for i in range(1, lines + 1))


def test_a_text_behind_a_line_number_gutter_is_file_content():
    assert is_file_text(numbered(3))  # cat -n / Claude Code's Read: digits then an arrow
    assert is_file_text(numbered(3, "\t"))  # an editor's view: digits then a tab
    assert not is_file_text(numbered(2))  # two lines: too few to tell
    assert not is_file_text("total 8\ndrwxr-xr-x 2 me me 4096 .\n-rw-r--r-- 1 me me  120 a.py")  # shell output
    assert not is_file_text("a.py:12: x = 1\nb.py:3: y = 2\nc.py:9: z = 3")  # grep hits: a path before the number
    half = numbered(2) + "\nplain line\nanother plain line"
    assert is_file_text(half)  # half the non-empty lines behind the gutter
    assert not is_file_text(half + "\na third plain line")
    assert is_file_text(numbered(3) + "\n\n\n")  # empty lines do not count against it


def test_tool_names_are_matched_without_case_or_separators():
    assert [tool_key(n) for n in ("Read", "read_file", "str_replace-editor", "apply.patch", None)] == [
        "read", "readfile", "strreplaceeditor", "applypatch", ""]


def test_a_messages_file_tokens_follow_its_tool_and_its_text():
    s = sizer()
    source = "def f():\n    return 1\n"
    assert s.file_tokens(Message("tool", source, name="Read")) == 6  # a file-reading tool: whatever it returns
    assert s.file_tokens(Message("tool", source, name="read_file")) == 6
    assert s.file_tokens(Message("tool", "ok\nfine\ndone", name="Bash")) == 0  # shell output
    listing = numbered(4)
    assert s.file_tokens(Message("tool", listing, name="Bash")) == s.counter.count(listing)  # cat -n via a shell
    write = ToolCall("c1", "Write", {"file_path": "a.py", "content": source})
    shell = ToolCall("c2", "Bash", {"command": "ls"})
    message = Message("assistant", "Writing it.", tool_calls=(write, shell))
    assert s.file_tokens(message) == s.counter.count(write.arguments_json)  # a file-writing call's arguments only
    assert s.file_tokens(Message("user", "please read a.py")) == 0


def test_the_sizer_counts_file_content_at_its_weight_then_scales():
    m = Message("tool", "a" * 400, name="Read")  # 100 tokens of file content
    plain = sizer(Framing(message_tokens=20, scale=1.2)).message(m)
    weighted = sizer(Framing(message_tokens=20, scale=1.2, file_weight=0.875)).message(m)
    assert plain == round(120 * 1.2)
    assert weighted == round((120 - 0.125 * 100) * 1.2)
    shell = Message("tool", "a" * 400, name="Bash")  # the rest: not weighted
    assert sizer(Framing(message_tokens=20, scale=1.2, file_weight=0.875)).message(shell) == plain


def test_each_distinct_text_is_classified_once(monkeypatch: pytest.MonkeyPatch):
    seen: list[str] = []

    def spy(text: str) -> bool:
        seen.append(text)
        return counting.is_file_text.__wrapped__(text)  # type: ignore[attr-defined]

    spy.__wrapped__ = counting.is_file_text  # type: ignore[attr-defined]
    monkeypatch.setattr(counting, "is_file_text", spy)
    s = sizer(Framing(file_weight=0.5))
    listing, output = numbered(5), "ok\nfine\ndone"
    sizes = {s.message(Message("tool", text, name="Bash")) for _ in range(3) for text in (listing, output)}
    assert sorted(seen) == sorted([listing, output])  # one scan per distinct text, however often it is sized
    assert len(sizes) == 2


# ---------------------------------------------------------------- a session billed at two ratios

REST, FILE_WEIGHT, OVERHEAD = 1.2, 0.875, 20  # the rest billed at 1.2, file content at 1.2 x 0.875 = 1.05


def billed_size(tokens: int, file_tokens: int) -> int:
    """What the provider bills for one message: its rest and file tokens at their ratios, + the overhead."""
    return round((tokens - (1 - FILE_WEIGHT) * file_tokens + OVERHEAD) * REST)


def two_ratio_trace() -> Trace:
    """An agent that reads files (large results: file content) and runs commands (shell output) in an
    irregular mix, on an Anthropic model: every message billed per `billed_size`."""
    s = sizer(Framing(message_tokens=0, tool_call_tokens=0))  # the texts alone
    sizes = [(1600, "Bash"), (4800, "Read"), (400, "Bash"), (8000, "Read"), (6000, "Bash"), (800, "Read"),
             (3200, "Bash"), (12000, "Read"), (200, "Bash"), (2400, "Read"), (9600, "Bash"), (600, "Read")]
    messages: list[Message] = [Message("user", "explore the repository " * 8, ts=format_ts(T0))]
    billed = PREFIX + billed_size(s.counter.count(messages[0].content), 0)
    for k, (chars, tool) in enumerate(sizes):
        call = ToolCall(f"t{k}", tool, {"command": f"step {k}"} if tool == "Bash" else {"file_path": f"f{k}.py"})
        assistant = Message("assistant", f"step {k}", ts=format_ts(T0 + 10 * k + 1), tool_calls=(call,),
                            usage=Usage(billed, 0, 0, 0, 20), model="claude-sonnet-4-5")
        text = ("x = compute(y)\n" * (chars // 15)) if tool == "Read" else ("-rw-r--r-- 1 me 42 a\n" * (chars // 21))
        result = Message("tool", text, ts=format_ts(T0 + 10 * k + 2), tool_call_id=f"t{k}", name=tool)
        messages += [assistant, result]
        for m in (assistant, result):
            billed += billed_size(s.message(m), s.file_tokens(m))
    messages.append(Message("assistant", "done", ts=format_ts(T0 + 500), usage=Usage(billed, 0, 0, 0, 5),
                            model="claude-sonnet-4-5"))
    return Trace("two-ratio", (Session(id="r", source="synthetic", model="claude-sonnet-4-5", provider="anthropic",
                                       messages=tuple(messages)),))


def prior(weight: float) -> calibrate.TokenPrior:
    return replace(token_prior("o200k_base", "anthropic"), tokenizer="chars4", file_weight=weight, classes=None)


def test_the_class_weighted_fit_finds_the_bill_and_the_plain_one_does_not():
    trace = two_ratio_trace()
    weighted = calibration(trace, "chars4", prior=prior(FILE_WEIGHT))
    plain = calibration(trace, "chars4", prior=prior(1.0))
    assert weighted.source == "fit" and weighted.file_weight == FILE_WEIGHT
    assert weighted.scale == pytest.approx(REST, abs=0.002) and abs(weighted.message_tokens - OVERHEAD) <= 1
    assert weighted.quality["prompt_error_p90"] < 0.0005  # per-message rounding only
    # one ratio for every text cannot follow a bill whose growth depends on what each step returned
    assert plain.quality["prompt_error_median"] > 5 * weighted.quality["prompt_error_median"] + 0.001
    assert plain.quality["prompt_error_p90"] > 0.005
    # one calibration serves validate (and replay, compare): the framing carries the weight
    assert weighted.framing().file_weight == FILE_WEIGHT and weighted.to_json()["file_weight"] == FILE_WEIGHT
    result = validate(trace, "chars4", calibration=weighted)
    worst = max(abs(c.simulated_input_tokens - c.recorded_input_tokens) / c.recorded_input_tokens
                for c in result.checks)
    assert worst < 0.001


def test_a_prior_without_file_scale_counts_every_text_alike(monkeypatch: pytest.MonkeyPatch):
    data: dict[str, Any] = {"token": [
        {"tokenizer": "t", "provider": "p", "scale": 1.2, "scale_low": 1.0, "scale_high": 1.4, "message_tokens": 8,
         "message_tokens_low": 0, "message_tokens_high": 16, "file_scale": 1.05, "rest_scale": 1.2, "source": "s",
         "date": "d"},
        {"tokenizer": "*", "provider": "*", "scale": 1.0, "scale_low": 0.5, "scale_high": 2.0, "message_tokens": 4,
         "message_tokens_low": 0, "message_tokens_high": 32, "source": "s", "date": "d"}]}
    monkeypatch.setattr(calibrate, "_priors_data", lambda: data)
    flat = token_prior("t", "p")
    assert flat.file_weight == 1.0 and flat.scale == 1.2 and flat.classes == (1.05, 1.2)  # one ratio, classes known
    assert flat.by_class().file_weight == 0.875 and flat.by_class().scale == 1.2  # file_scale / rest_scale
    assert token_prior("other", "p").file_weight == 1.0 and token_prior("other", "p").classes is None
    assert json.loads(json.dumps(flat.by_class().to_json()))["file_weight"] == 0.875


def test_the_fit_keeps_ratios_by_class_only_where_they_fit_better():
    """With the Anthropic prior's classes (1.05 / 1.17): a bill whose ratio depends on content is fitted by class;
    a bill with one ratio for every text (ctxsim's synthetic biller) keeps one ratio. A note says which."""
    base = replace(token_prior("o200k_base", "anthropic"), tokenizer="chars4")
    assert base.classes == (1.05, 1.17) and base.file_weight == 1.0
    by_class = calibration(two_ratio_trace(), "chars4", prior=base)
    assert by_class.file_weight == round(1.05 / 1.17, 4)
    assert any(n.startswith("token ratio by content class") for n in by_class.notes)
    from ctxsim.synth import synthesize

    flat_bill = synthesize("coding", turns=20, seed=3, billing={"hidden_tokens": 5000, "token_scale": 1.2,
                                                                "message_tokens": 24, "cold_rate": 0.0})
    one = calibration(flat_bill, "o200k_base")
    assert one.file_weight == 1.0 and abs(one.scale - 1.2) <= 0.01 and not one.fell_back
    assert any(n.startswith("one token ratio for every text") for n in one.notes)


# ---------------------------------------------------------------- the DeepSeek prior


def test_deepseek_has_its_own_prior_from_its_chat_encodings():
    p = token_prior("o200k_base", "deepseek")
    assert p.provider == "deepseek"
    assert (p.message_tokens, p.message_tokens_low, p.message_tokens_high) == (20, 2, 48)
    assert "encoding_dsv4.py" in p.source and "tokenizer_config.json" in p.source and p.date
    assert p.file_weight == 1.0
    assert token_prior("o200k_base", "google").provider == "*"  # others keep the wide default
