"""Issue 25, second round: `validate --predict` takes no per-session setting from the scored requests, and
report.md says the predicted error beside `none` against the bill, as replay and compare do.

The cache TTL inferred from recorded 1-hour writes and whether the log recorded any cache read (a model with no
cache-read price replays with no cache) come from the fitted requests only: what the scored requests billed may
change the score, never the prediction.

Counted with chars4 (a token is 4 characters); the sessions are billed as ctxsim's own engine replays them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ctxsim.analysis.predict import predict, split
from ctxsim.caching.anthropic import recorded_ttl
from ctxsim.model import Message, Session, Trace, Usage, format_ts
from ctxsim.policies import parse_policy
from ctxsim.replay.engine import Replayer, Setup, resolve
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import Framing, MessageSizer

SONNET_T0 = 1_768_323_360.0  # 2026-01-13
MISTRAL_T0 = 1_758_026_593.0  # 2025-09-16: mistral-small had no cache-read price in the price data then


def billed(model: str, provider: str, t0: float, turns: int = 8) -> Trace:
    """A session billed as the engine replays it (sizes x 1.25, 12 tokens a message, a 2,000-token system
    prompt the log does not hold). User message k is 150 k tokens, every answer 40."""
    t = t0
    messages = []
    for k in range(1, turns + 1):
        messages.append(Message("user", "abcd" * (150 * k), ts=format_ts(t)))
        t += 15
        messages.append(Message("assistant", "wxyz" * 40, ts=format_ts(t)))
        t += 5
    truth = Session(id="s", model=model, provider=provider, system_tokens=2_000, tools_tokens=0,
                    messages=tuple(messages))
    sizer = MessageSizer(TokenCounter(get_tokenizer("chars4")),
                         Framing(message_tokens=12, tool_call_tokens=0, tool_result_tokens=0, scale=1.25))
    rows = iter(r for r in Replayer(Trace("truth", (truth,)), sizer, Setup()).run(parse_policy("none")).rows
                if r.kind == "request")
    out = []
    for m in messages:
        if m.role == "assistant":
            r = next(rows)
            out.append(replace(m, usage=Usage(r.input_tokens, r.cache_read_tokens, r.cache_write_tokens, 0, 40)))
        else:
            out.append(m)
    return Trace("billed", (replace(truth, system_tokens=None, messages=tuple(out)),))


def rebill(trace: Trace, after: int, change: Callable[[Usage], Usage]) -> Trace:
    """`trace` with `change` applied to the usage of its requests after the `after`-th."""
    s = trace.sessions[0]
    out, index = [], 0
    for m in s.messages:
        if m.role == "assistant":
            index += 1
            if index > after and m.usage is not None:
                out.append(replace(m, usage=change(m.usage)))
                continue
        out.append(m)
    return replace(trace, sessions=(replace(s, messages=tuple(out)),))


def simulated(trace: Trace) -> list[tuple[int, int, int, object]]:
    p = predict(trace, "chars4")
    return [(c.simulated_input_tokens, c.simulated_cache_read_tokens, c.simulated_cache_write_tokens,
             c.simulated_cost_usd) for c in p.checks]


def test_the_cache_ttl_comes_from_the_fitted_writes_only():
    five = billed("claude-sonnet-4-5", "anthropic", SONNET_T0)
    # the same session whose scored half (requests 5-8) billed its writes as 1-hour ones
    hour = rebill(five, 4, lambda u: replace(u, cache_write_tokens=0, cache_write_1h_tokens=u.cache_write_tokens))
    assert recorded_ttl(hour.sessions[0]) == "1h"  # the whole log: most written tokens are 1-hour writes
    assert recorded_ttl(split(hour, 0.5)[0].sessions[0]) == "5m"  # the fitted half: 5-minute ones
    writes = [c.simulated_cache_write_tokens for c in predict(hour, "chars4").checks]
    assert len(writes) == 4 and all(w > 0 for w in writes)  # writes to price: a 1-hour TTL would bill them 2x
    assert simulated(hour) == simulated(five)
    # the scored requests' bill still scores them: a dearer recorded cost, the same prediction
    assert sum(c.recorded_cost_usd for c in predict(hour, "chars4").checks) > \
        sum(c.recorded_cost_usd for c in predict(five, "chars4").checks)


def test_a_cache_read_recorded_in_the_scored_part_only_does_not_turn_caching_on():
    plain = billed("mistral-small-latest", "mistral", MISTRAL_T0)
    assert resolve(plain, Setup())[0].cache.name == "none"  # no cache-read price, no recorded read
    assert all(m.usage.cache_read_tokens == 0 for m in plain.sessions[0].messages if m.usage is not None)
    # the scored half records reads of the previous prompt (2,000 tokens each): the whole log says "prefix"
    read = rebill(plain, 4, lambda u: replace(u, cache_read_tokens=2_000))
    assert resolve(read, Setup())[0].cache.name == "prefix"
    got = simulated(read)
    assert len(got) == 4 and [r for _, r, _, _ in got] == [0, 0, 0, 0]
    assert got == simulated(plain)
    # reads recorded in the fitted half: the provider did cache, the prediction reads too
    fitted = rebill(plain, 1, lambda u: replace(u, cache_read_tokens=2_000))
    assert all(r > 0 for _, r, _, _ in simulated(fitted))


def test_report_md_says_the_predicted_error_beside_none(tmp_path: Path):
    from ctxsim.formats import native as native_format
    from ctxsim.replay.api import replay_trace
    from ctxsim.reports import render

    trace = billed("claude-sonnet-4-5", "anthropic", SONNET_T0)
    path = tmp_path / "billed.jsonl"
    with path.open("w") as out:
        native_format.write(trace, out)
    result = replay_trace(str(path), ["none", "clear"], tokenizer="chars4", calibrate=True)
    block = result.manifest["calibration"]["predicted"]
    assert block["scored_requests"] == 4 and block["cost_error"] is not None
    text = render("markdown", result, "md")
    lines = text.splitlines()
    said = [i for i, line in enumerate(lines) if line.startswith("None predicted (fitted on the first 50%")]
    assert len(said) == 1
    line = lines[said[0]]
    assert f"cost {block['cost_error'] * 100:+.2f}%" in line and "scored on the other 4 requests" in line
    assert f"hit rate {block['hit_rate_simulated'] * 100:.2f}% against {block['hit_rate_recorded'] * 100:.2f}%" in line
    table = next(i for i, line in enumerate(lines) if line.startswith("| "))
    assert said[0] < table  # said before any figure is read
    assert "abcd" not in text and "wxyz" not in text  # no trace content
