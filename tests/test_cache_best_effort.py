"""Best-effort implicit caching (DeepSeek, Gemini) as a rate with a range, on a constructed DeepSeek session.

The model's read is the point estimate; the provider may serve less of it (caching/data.toml served_share:
DeepSeek 0.95 to 1). A provider that served 95 % of every read (priced here from the rows, independently of
the wrapper) costs exactly the range's high end; one that served all of it, the low end (the point); one that
served 90 % lies outside. A provider that promises its hits (Anthropic) gets no range.
"""

from __future__ import annotations

from decimal import Decimal

from ctxsim.caching.best_effort import checks_span_usd, served_share
from ctxsim.model import Message, Session, Trace, format_ts
from ctxsim.policies import parse_policy
from ctxsim.pricing.prices import Bill, Pricer
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import Framing, MessageSizer

T0 = 1_768_323_360.0  # 2026-01-13
EXACT = Framing(message_tokens=0, tool_call_tokens=0, tool_result_tokens=0)


def _session(model: str, provider: str) -> Session:
    t = T0
    messages = []
    for user in (3_000, 800, 600, 900, 700):
        messages.append(Message("user", "", ts=format_ts(t), extra_tokens=user))
        messages.append(Message("assistant", "", ts=format_ts(t + 5), extra_tokens=150))
        t += 30
    return Session(id="s", model=model, provider=provider, system_tokens=1_000, tools_tokens=0,
                   messages=tuple(messages))


def _run(session: Session):  # type: ignore[no-untyped-def]
    replayer = Replayer(Trace("t", (session,)), MessageSizer(TokenCounter(get_tokenizer("chars4")), EXACT), Setup())
    return replayer.run(parse_policy("none"))


def test_a_deepseek_replay_carries_the_served_share_as_its_cost_range():
    share = served_share("deepseek", "deepseek-chat")
    assert share is not None and (share.low, share.high) == (0.95, 1.0)
    run = _run(_session("deepseek-chat", "deepseek"))
    rows = [r for r in run.rows if r.kind == "request"]
    assert sum(r.cache_read_tokens for r in rows) > 10_000  # the model reads the shared prefixes (64-token units)
    pricer = Pricer("deepseek", "deepseek-chat")

    def served(fraction: float) -> Decimal:  # what a provider serving `fraction` of each read bills
        return sum((pricer.cost(Bill(r.input_tokens, int(r.cache_read_tokens * fraction), 0, 0, r.output_tokens),
                                T0) for r in rows), Decimal(0))

    low, high = run.totals.cost_range_usd
    assert low == run.totals.cost_usd == served(1.0)  # the model's reads are the point and the cheap end
    assert high == served(0.95)  # the low share: the dear end
    assert high > low
    assert served(0.90) > high  # a provider serving 90 % lies outside: the range is the learned one
    # the same span from validate's per-request figures (what the predicted score calls)
    checks = [type("Check", (), {"ts": r.ts, "simulated_input_tokens": r.input_tokens,
                                 "simulated_cache_read_tokens": r.cache_read_tokens})() for r in rows]
    assert checks_span_usd("deepseek", "deepseek-chat", checks) == (Decimal(0), high - low)


def test_a_provider_that_promises_its_hits_gets_no_range():
    assert served_share("anthropic", "claude-sonnet-4-5") is None
    assert served_share("openai", "gpt-5") is None
    assert served_share("google", "gemini-2.5-pro") is not None
    run = _run(_session("claude-sonnet-4-5", "anthropic"))
    assert run.totals.cost_range_usd is None
    assert checks_span_usd("anthropic", "claude-sonnet-4-5", []) == (Decimal(0), Decimal(0))
