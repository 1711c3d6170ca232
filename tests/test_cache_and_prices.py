"""Cache models and pricing, checked against the documented rules by hand."""

from __future__ import annotations

from decimal import Decimal

import pytest
from helpers import T0, replay, session_of, turn_messages
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxsim.caching import model_rules
from ctxsim.errors import CtxsimError, ParameterError
from ctxsim.model import Message, ToolCall, format_ts
from ctxsim.pricing.prices import Bill, Pricer

SYSTEM = "s" * 5000  # 1,250 chars4 tokens + 4 framing: above the 1,024-token minimum


def steady(turns: int, gap_s: float, size: int = 2000):
    messages = []
    for i in range(1, turns + 1):
        # A user message opens each turn, so the request is sent at T0 + i * gap_s.
        messages += turn_messages(i, "bash", "o" * size, T0 + i * gap_s, user=f"step {i}")
    return session_of(messages, system=SYSTEM)


def test_anthropic_reads_previous_prefix_and_writes_the_rest():
    run = replay(steady(4, 10), cache="anthropic")
    first, second = run.rows[0], run.rows[1]
    assert first.cache_read_tokens == 0 and first.cache_write_tokens == first.input_tokens
    # The second request reads exactly the first request's prompt and writes what was appended.
    assert second.cache_read_tokens == first.input_tokens
    assert second.cache_write_tokens == second.input_tokens - first.input_tokens
    assert second.uncached_tokens == 0


def test_anthropic_ttl_expires_over_a_gap_and_1h_survives_it():
    gap = 10 * 60  # ten minutes between requests: a 5-minute cache is cold every time
    cold = replay(steady(3, gap), cache="anthropic")
    # The three turn requests are ten minutes apart (the closing request follows at once).
    assert all(r.cache_read_tokens == 0 for r in cold.rows[:3])
    assert all(r.warm_cache_read_tokens > 0 for r in cold.rows[1:])
    assert cold.totals.cost_usd > cold.totals.cost_warm_usd
    hour = replay(steady(3, gap), cache="anthropic:ttl=1h")
    assert hour.rows[1].cache_read_tokens == hour.rows[0].input_tokens
    assert hour.rows[1].cache_write_tokens == 0 and hour.rows[1].cache_write_1h_tokens > 0


def test_anthropic_read_refreshes_ttl():
    # Requests 4 minutes apart: each read refreshes the entry, so the cache never expires
    # although 12 minutes pass between the first write and the last read.
    run = replay(steady(4, 240), cache="anthropic")
    assert all(r.cache_read_tokens > 0 for r in run.rows[1:])


def test_anthropic_minimum_cacheable_length():
    small = session_of(turn_messages(1, "bash", "o" * 100, T0) + turn_messages(2, "bash", "o" * 100, T0 + 5),
                       system="short")
    run = replay(small, cache="anthropic")
    assert all(r.cache_read_tokens == 0 and r.cache_write_tokens == 0 for r in run.rows)
    assert model_rules("anthropic", "claude-haiku-4-5")["min_tokens"] == 4096
    assert model_rules("anthropic", "claude-sonnet-4-5-20250929")["min_tokens"] == 1024
    # Sonnet 4.6's minimum was lowered on 2026-05-15.
    assert model_rules("anthropic", "claude-sonnet-4-6", T0)["min_tokens"] == 2048
    assert model_rules("anthropic", "claude-sonnet-4-6", 1_790_000_000)["min_tokens"] == 1024


def test_anthropic_lookback_is_20_blocks():
    # Request 2 comes after one assistant message with 25 tool calls (26 blocks + 25 results):
    # the previous request's breakpoint is more than 20 blocks back, so only the system prefix is read.
    calls = tuple(ToolCall(f"k{i}", "bash", {"i": i}) for i in range(25))
    messages = [Message("user", "go", ts=format_ts(T0)),
                Message("assistant", "fan out", tool_calls=calls, ts=format_ts(T0 + 1))]
    messages += [Message("tool", "r" * 400, tool_call_id=f"k{i}", name="bash", ts=format_ts(T0 + 2))
                 for i in range(25)]
    run = replay(session_of(messages, system=SYSTEM), cache="anthropic")
    system_prefix = 1250 + 4
    assert run.rows[1].cache_read_tokens == system_prefix
    wide = replay(session_of(messages, system=SYSTEM), cache="anthropic:lookback_blocks=100")
    assert wide.rows[1].cache_read_tokens == run.rows[0].input_tokens


def test_openai_minimum_and_128_token_steps():
    run = replay(steady(3, 10, size=4000), cache="openai", provider="openai", model="gpt-4.1")
    second = run.rows[1]
    shared = run.rows[0].input_tokens
    assert shared >= 1024
    assert second.cache_read_tokens == 1024 + (shared - 1024) // 128 * 128
    assert second.cache_write_tokens == 0  # no write premium before GPT-5.6
    tiny = replay(steady(2, 10, size=40), cache="openai", provider="openai", model="gpt-4.1")
    assert all(r.cache_read_tokens == 0 for r in tiny.rows) or tiny.rows[0].input_tokens >= 1024


def test_openai_in_memory_retention_expires_after_idle():
    run = replay(steady(3, 15 * 60, size=4000), cache="openai", provider="openai", model="gpt-4.1")
    assert all(r.cache_read_tokens == 0 for r in run.rows[:3])
    extended = replay(steady(3, 15 * 60, size=4000), cache="openai:retention=24h", provider="openai",
                      model="gpt-4.1")
    assert extended.rows[1].cache_read_tokens > 0


def test_prefix_model_options():
    plain = replay(steady(3, 10), cache="prefix")
    assert plain.rows[1].cache_read_tokens == plain.rows[0].input_tokens
    assert plain.rows[1].cache_write_tokens == 0
    writes = replay(steady(3, 10), cache="prefix:writes=true,min_tokens=1000000")
    assert all(r.cache_read_tokens == 0 and r.cache_write_tokens == r.input_tokens for r in writes.rows)


def test_cache_parameters_are_strict():
    with pytest.raises(ParameterError, match="unknown parameter"):
        replay(steady(1, 10), cache="anthropic:tll=1h")
    with pytest.raises(ParameterError, match="breakpoint"):
        replay(steady(1, 10), cache="anthropic:breakpoints=[system,nowhere]")


def test_each_request_priced_on_its_own_tier():
    # Sonnet 4.5: $3 per million input tokens, $6 above 200k prompt tokens (Anthropic's price table).
    pricer = Pricer("anthropic", "claude-sonnet-4-5")
    small = pricer.cost(Bill(150_000), T0)
    large = pricer.cost(Bill(250_000), T0)
    assert small == Decimal("0.45") and large == Decimal("1.5")
    together = pricer.cost(Bill(400_000), T0)
    assert together == Decimal("2.4") != small + large  # pricing totals in one call picks the wrong tier


def test_cache_prices_and_one_hour_writes():
    pricer = Pricer("anthropic", "claude-sonnet-4-5")
    # 50k read at $0.30, 50k 5m write at $3.75, 50k 1h write at $6, per million (prompt under 200k).
    bill = Bill(150_000, cache_read_tokens=50_000, cache_write_tokens=50_000, cache_write_1h_tokens=50_000)
    assert pricer.cost(bill, T0) == Decimal("0.015") + Decimal("0.1875") + Decimal("0.3")
    # Above 200k prompt tokens every rate doubles: the cache rates are tiered too.
    big = Bill(300_000, cache_read_tokens=100_000, cache_write_tokens=100_000, cache_write_1h_tokens=100_000)
    assert pricer.cost(big, T0) == Decimal("0.06") + Decimal("0.75") + Decimal("1.2")


def test_unknown_model_is_a_clear_error():
    with pytest.raises(CtxsimError, match="no price for model"):
        Pricer("anthropic", "claude-imaginary-9")




@settings(max_examples=60, deadline=None)
@given(prompt=st.integers(0, 400_000), split=st.tuples(*[st.floats(0, 1)] * 3), output=st.integers(0, 50_000),
       model=st.sampled_from([("anthropic", "claude-sonnet-4-5"), ("anthropic", "claude-opus-4-1"),
                              ("openai", "gpt-4.1"), ("google", "gemini-2.5-pro")]))
def test_fast_pricing_equals_genai_prices(prompt, split, output, model):
    """`Pricer.cost` reads rates off the price data; it must equal genai-prices' calc_price."""
    read = int(prompt * split[0] / 3)
    write = int(prompt * split[1] / 3)
    hour = int(prompt * split[2] / 3) if model[0] == "anthropic" else 0
    pricer = Pricer(*model)
    bill = Bill(prompt, read, write, hour, output)
    assert pricer.cost(bill, T0) == pricer.reference_cost(bill, T0)
