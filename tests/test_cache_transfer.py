"""Recorded provider misses carried to a policy's own prompts (issue 25): the transfer rules and the cost range.

A constructed provider serves only part of what it has cached at 30 fixed requests of a 60-request session.
The truth for any policy is the policy's replay with that provider (`Serves`, written here independently of
ctxsim.caching.transfer): at those requests it reads half of what the model would (a share miss), or the
model's read less a fixed number of tokens (an absolute miss). The log shows the miss for the recorded
prompt only; the facts the calibration keeps (ceiling and the model's reference read) must give every
policy a cost range that holds its true cost under either mechanism, where the old rule (min(own read,
ceiling)) left the policies too cheap.
"""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal

import pytest

from ctxsim.caching import CacheInfo, CacheResult, CacheSpec
from ctxsim.caching.anthropic import AnthropicParams
from ctxsim.caching.recorded import FACTS_KEY
from ctxsim.caching.transfer import cost_range, transferred_read
from ctxsim.model import Message, Session, ToolCall, Trace, format_ts
from ctxsim.policies import parse_policy
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import Framing, MessageSizer

T0 = 1_768_323_360.0  # 2026-01-13
MISSED = frozenset(range(20, 50))  # the 30 requests the provider served only part of its cache at
POLICIES = ("none", "clear:trigger=8000,keep=3,clear_at_least=500", "recent:keep_first=1,keep_last=24",
            "compact:trigger=20000,compact_above=15000,keep_recent=12,clear_at_least=2000")


# ---------------------------------------------------------------- the rules, by hand


def test_the_two_rules_and_the_old_cap():
    # the recorded prompt's model read 10,000 where the provider read 4,000: 6,000 tokens lost, 40 % served
    assert transferred_read(10_000, 4_000, 10_000, "share") == 4_000  # `none` itself: the recorded read
    assert transferred_read(10_000, 4_000, 10_000, "absolute") == 4_000
    assert transferred_read(5_000, 4_000, 10_000, "share") == 2_000  # 40 % of the policy's 5,000
    assert transferred_read(5_000, 4_000, 10_000, "absolute") == 0  # 5,000 - 6,000, not below nothing
    assert transferred_read(8_000, 4_000, 10_000, "absolute") == 2_000
    # no reference (facts kept before it was): the ceiling caps, which never binds below it
    assert transferred_read(5_000, 4_000, None, "share") == 4_000
    assert transferred_read(3_000, 4_000, None, "absolute") == 3_000
    # a ceiling at or above the reference is not a miss of the model's read: a cap only
    assert transferred_read(5_000, 12_000, 10_000, "absolute") == 5_000
    assert transferred_read(0, 0, 10_000, "share") == 0


def test_the_cost_range_takes_each_requests_cheaper_and_dearer_end():
    low, high = cost_range(Decimal("1.00"), [Decimal("0.10"), Decimal("-0.03"), Decimal("0.02")])
    assert (low, high) == (Decimal("0.97"), Decimal("1.12"))
    assert cost_range(Decimal(2), []) == (Decimal(2), Decimal(2))


# ---------------------------------------------------------------- a constructed partial-miss provider


class Serves:
    """The true provider: the Anthropic model, but at the MISSED requests it serves `share` of the read (or the
    read less `lost` tokens) and writes the rest again."""

    def __init__(self, inner, share: float | None, lost: int | None) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.share, self.lost = inner, share, lost
        self.name, self.params = inner.name, inner.params
        self.number = 0

    def edited(self, boundary: int) -> None:
        self.inner.edited(boundary)

    def request(self, history, ts_s):  # type: ignore[no-untyped-def]
        real, warm = self.inner.request(history, ts_s)
        self.number += 1
        if self.number not in MISSED:
            return real, warm
        if self.share is not None:
            read = int(real.read_tokens * self.share)
        else:
            read = max(0, real.read_tokens - (self.lost or 0))
        return CacheResult(read, real.write_tokens + real.read_tokens - read, real.write_1h_tokens), warm


def _session() -> Session:
    """60 requests: a user ask (120 tokens), a tool call, its result (600 tokens), an answer; system 3,000."""
    t = T0
    messages: list[Message] = []
    for k in range(60):
        messages.append(Message("user", "ab cd " * 80 + str(k), ts=format_ts(t)))
        t += 20
        call = ToolCall(f"c{k}", "read_file", {"path": f"src/m{k}.py"})
        messages.append(Message("assistant", "", ts=format_ts(t), tool_calls=(call,)))
        t += 1
        messages.append(Message("tool", "x = 1  # line\n" * 170, ts=format_ts(t), tool_call_id=f"c{k}",
                                name="read_file"))
    return Session(id="s", model="claude-sonnet-4-5", provider="anthropic", system_tokens=3_000, tools_tokens=0,
                   messages=tuple(messages))


def _run(session: Session, policy: str, truth: tuple[float | None, int | None] | None = None):  # type: ignore[no-untyped-def]
    sizer = MessageSizer(TokenCounter(get_tokenizer("chars4")),
                         Framing(message_tokens=0, tool_call_tokens=0, tool_result_tokens=0))
    replayer = Replayer(Trace("t", (session,)), sizer, Setup())
    if truth is not None:
        from ctxsim.caching.anthropic import AnthropicCache

        share, lost = truth
        info = CacheInfo("serves", AnthropicParams, lambda p, m: Serves(AnthropicCache(p, m), share, lost), "test",
                         __name__)
        replayer.resolved = replace(replayer.resolved, cache=CacheSpec(info, AnthropicParams()))
    return replayer.run(parse_policy(policy))


def _facts(session: Session, truth: tuple[float | None, int | None]) -> dict:
    """What the calibration keeps from the log of that provider: at each missed request, the recorded read
    (the ceiling) and the model's own read (the reference), from the unmanaged replay."""
    model = [r for r in _run(session, "none").rows if r.kind == "request"]
    billed = [r for r in _run(session, "none", truth).rows if r.kind == "request"]
    return {r.index: (b.cache_read_tokens, None, None, r.cache_read_tokens)
            for r, b in zip(model, billed, strict=True) if b.cache_read_tokens < r.cache_read_tokens}


@pytest.mark.parametrize("truth", [(0.5, None), (None, 6_000)], ids=["share", "absolute"])
def test_every_policys_range_holds_its_true_cost(truth):
    session = _session()
    facts = _facts(session, truth)
    assert len(facts) == 30
    with_facts = replace(session, extra={FACTS_KEY: facts})
    for spec in POLICIES:
        true_cost = _run(session, spec, truth).totals.cost_usd
        totals = _run(with_facts, spec).totals
        low, high = totals.cost_range_usd
        assert low <= totals.cost_usd <= high
        assert low <= true_cost <= high, (spec, low, true_cost, high)
        if spec == "none":  # the recorded prompt: the bill itself, one number
            assert low == high == true_cost
        else:  # the policies' prompts are smaller: the rules part, and the range says by how much
            assert high > low
            # the old rule (read at most the ceiling) never binds on the smaller prompts: too cheap
            capped = {k: v[:3] for k, v in facts.items()}
            old = _run(replace(session, extra={FACTS_KEY: capped}), spec).totals.cost_usd
            assert old < low and (true_cost - old) / true_cost > Decimal("0.03")


def test_the_range_is_in_the_runs_json_only_with_facts():
    session = _session()
    plain = _run(session, "recent:keep_first=1,keep_last=24").totals
    assert plain.cost_range_usd is None and "cost_range_usd" not in plain.to_json()
    ranged = _run(replace(session, extra={FACTS_KEY: _facts(session, (0.5, None))}),
                  "recent:keep_first=1,keep_last=24").totals
    saved = json.loads(json.dumps(ranged.to_json()))["cost_range_usd"]
    assert [Decimal(v) for v in saved] == list(ranged.cost_range_usd)


# ---------------------------------------------------------------- the predicted range (validate --predict)


def test_the_fitted_misses_carry_to_the_scored_requests_as_a_share():
    from ctxsim.analysis.predict import predict
    from ctxsim.caching.miss_range import lost_share, miss_span_usd
    from ctxsim.pricing.prices import Bill, Pricer

    # two ceilings on the fitted requests: 3,000 of 10,000 model-read tokens lost; a floor counts nothing
    assert lost_share({2: (1_000, None, None, 3_000), 3: (4_000, None, None, 5_000), 4: (None, 900, None, None)},
                      10_000) == 0.3
    assert lost_share({}, 10_000) == 0.0 and lost_share({2: (1_000, None, None, 3_000)}, 0) == 0.0
    check = type("Check", (), {"ts": format_ts(T0), "simulated_input_tokens": 10_000,
                               "simulated_cache_read_tokens": 8_000, "simulated_cache_write_tokens": 2_000})()
    # Anthropic: 30 % of the 8,000 read (2,400) written instead, Sonnet 4.5: 2,400 x ($3.75 - $0.30) / MTok
    assert miss_span_usd("anthropic", "claude-sonnet-4-5", [check], 0.3) == Decimal("0.00828")
    pricer = Pricer("openai", "gpt-4o")  # no writes: sent uncached
    expected = pricer.cost(Bill(10_000, 5_600, 2_000), T0) - pricer.cost(Bill(10_000, 8_000, 2_000), T0)
    assert miss_span_usd("openai", "gpt-4o", [check], 0.3) == expected > 0
    # a whole prediction: a miss on a fitted request widens the scored part's range above the point
    from test_cache_facts import _billed_trace

    p = predict(_billed_trace(miss_at=3), "chars4", 0.5)
    low, high = p.cost_range_usd
    point = sum((c.simulated_cost_usd for c in p.checks), Decimal(0))
    assert low == point < high
    clean = predict(_billed_trace(miss_at=0), "chars4", 0.5)
    assert clean.cost_range_usd[0] == clean.cost_range_usd[1]  # no miss to learn from: the point
