"""Issue 25, incomplete logs: a redacted text is sized by its marker's length (`[REDACTED_TEXT len=N sha=...]`).

A sanitised rollout keeps each text's length in its marker; counted as written, the marker weighs a dozen
tokens where the provider billed the text. Sizes: N characters at 4 a token, rounded up.
"""

from __future__ import annotations

from ctxsim.analysis.calibrate import calibration
from ctxsim.analysis.predict import missing_block, predict
from ctxsim.model import Message, Session, ToolCall, Trace, Usage, format_ts
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.redacted import marker_count, split_markers

T0 = 1_768_323_360.0


def test_a_marker_counts_as_the_text_it_replaced():
    counter = TokenCounter(get_tokenizer("o200k_base"))
    text = "before [REDACTED_TEXT len=4001 sha=036b7e47] after"
    assert counter.count(text) == counter.count("before  after") + 1001  # ceil(4001 / 4)
    # every kind of redacted item is sized; the encrypted reasoning's ciphertext length is not a text's
    assert split_markers("[REDACTED_OUTPUT len=400 sha=bc081c6b]") == ("", 100)
    assert split_markers("[REDACTED_ENCRYPTED_CONTENT len=2488 sha=e1af8911]")[1] == 0
    assert split_markers("no marker here") == ("no marker here", 0)
    primed = TokenCounter(get_tokenizer("o200k_base"))
    primed.prime([text, "[REDACTED_ARGUMENTS len=83 sha=b4e1e5f7]"])
    assert primed.count(text) == counter.count(text)  # the batch path agrees with the single one
    assert primed.count("[REDACTED_ARGUMENTS len=83 sha=b4e1e5f7]") == 21
    assert marker_count([text, text, "plain"]) == 2


def redacted_trace(turns: int = 10) -> Trace:
    """A Codex-like session whose every text is a marker: user k is `len=2,000` (500 tokens), each answer
    calls a tool whose output is `len=1,200` (300 tokens). Billed at the marker sizes + 4 a message on a
    3,000-token hidden prefix, as an exact tokenizer would count the texts; chars4 counts the call itself."""
    counter = TokenCounter(get_tokenizer("chars4"))
    messages = []
    billed = 3_000
    for k in range(1, turns + 1):
        user = Message("user", f"[REDACTED_TEXT len=2000 sha={k:08x}]", ts=format_ts(T0 + 60 * k))
        call = ToolCall(f"c{k}", "exec_command", f"[REDACTED_ARGUMENTS len=80 sha={k:08x}]")
        billed += 500 + 4
        answer = Message("assistant", "", ts=format_ts(T0 + 60 * k + 5), tool_calls=(call,),
                         usage=Usage(billed, 0, 0, 0, 30))
        billed += 4 + 4 + counter.count(call.name) + 20  # framing, the call's framing, its name, its 80 characters
        out = Message("tool", f"[REDACTED_OUTPUT len=1200 sha={k:08x}]", ts=format_ts(T0 + 60 * k + 6),
                      tool_call_id=f"c{k}", name="exec_command")
        billed += 300 + 4
        messages += [user, answer, out]
    return Trace("redacted", (Session(id="r", source="synthetic", model="gpt-4.1", provider="openai",
                                      messages=tuple(messages)),))


def test_a_redacted_log_needs_no_re_anchor_and_predicts_its_second_half():
    cal = calibration(redacted_trace(), "chars4")
    assert cal.anchors == ()  # the markers' lengths explain every request's growth
    assert any("redacted text(s) sized by their markers" in n for n in cal.notes)
    p = predict(redacted_trace(), "chars4", 0.5)
    # reported as what the log is missing: 10 x (500 + 20 + 300) tokens sized from the markers
    assert missing_block(redacted_trace(), cal, p)["redacted_tokens"] == 10 * (500 + 20 + 300)
    assert p.growth_model is None and [c.index for c in p.checks] == [6, 7, 8, 9, 10]
    assert max(abs(c.prompt_error) for c in p.checks) < 0.005
