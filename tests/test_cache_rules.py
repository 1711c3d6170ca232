"""Provider cache and billing rules (issue 25), each on a constructed session whose answer is worked out here.

- the TTL a product asked for is read from the session's recorded writes (1-hour writes bill 2x, not 1.25x,
  and keep entries an hour); a TTL chosen on the command line wins;
- thinking at a new user message: the models that keep earlier turns' thinking (Opus 4.5+, Sonnet 4.6+,
  and newer families, by family and version, whatever the id's spelling) read the whole conversation
  there; the older ones strip it and read only what lies before the first stripped turn;
- a model switch mid-session: one cache per model (the switched request reads nothing of the other's);
- OpenAI reads into the previous response (the Codex bills show it), in 128-token steps;
- dated rules: a session is billed and cached under the rules of its own date (Anthropic's long-context
  premium for Opus 4.6 ended on 2026-03-13; Gemini 2.5 Flash's implicit-cache minimum rose on 2026-10-13).
"""

from __future__ import annotations

import pytest

from ctxsim.caching.anthropic import claude_family, keeps_thinking, recorded_ttl
from ctxsim.model import Message, Session, Trace, Usage, format_ts
from ctxsim.policies import parse_policy
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import Framing, MessageSizer

T0 = 1_768_323_360.0  # 2026-01-13
EXACT = Framing(message_tokens=0, tool_call_tokens=0, tool_result_tokens=0)


def _session(writes_1h: bool | None, gap: float = 10.0, model: str = "claude-sonnet-4-5") -> Session:
    """System 2,000; user 3,000 / a 100 / user 500 / a 100 / user 400 / a 100: prompts 5,000, 5,600, 6,100; the
    usage recorded as 1-hour writes, 5-minute writes, or not at all (None)."""
    t = T0
    messages = []
    prompt = 2_000
    for k, user in enumerate((3_000, 500, 400)):
        messages.append(Message("user", "", ts=format_ts(t), extra_tokens=user))
        prompt += user
        t += gap
        read = 0 if k == 0 else prompt - user - 100  # the previous prompt
        written = prompt - read
        usage = None if writes_1h is None else (
            Usage(prompt, read, 0, written, 100) if writes_1h else Usage(prompt, read, written, 0, 100))
        messages.append(Message("assistant", "", ts=format_ts(t), extra_tokens=100, usage=usage))
        prompt += 100
        t += 1
    return Session(id="s", model=model, provider="anthropic", system_tokens=2_000, tools_tokens=0,
                   messages=tuple(messages))


def _rows(session: Session, setup: Setup | None = None) -> list[tuple[int, int, int]]:  # (read, 5m, 1h written)
    replayer = Replayer(Trace("t", (session,)), MessageSizer(TokenCounter(get_tokenizer("chars4")), EXACT),
                        setup or Setup())
    run = replayer.run(parse_policy("none"))
    return [(r.cache_read_tokens, r.cache_write_tokens, r.cache_write_1h_tokens) for r in run.rows]


def test_the_ttl_follows_the_sessions_recorded_writes():
    assert recorded_ttl(_session(True)) == "1h"
    assert recorded_ttl(_session(False)) == "5m"
    assert recorded_ttl(_session(None)) is None
    # 1-hour writes recorded: the replay writes 1-hour entries (billed 2x)
    assert _rows(_session(True)) == [(0, 0, 5_000), (5_000, 0, 600), (5_600, 0, 500)]
    assert _rows(_session(False)) == [(0, 5_000, 0), (5_000, 600, 0), (5_600, 500, 0)]
    assert _rows(_session(None)) == [(0, 5_000, 0), (5_000, 600, 0), (5_600, 500, 0)]  # the default, 5 minutes
    # 20 minutes between requests: 5-minute entries expire, 1-hour ones are read
    assert _rows(_session(True, gap=1_200.0)) == [(0, 0, 5_000), (5_000, 0, 600), (5_600, 0, 500)]
    assert _rows(_session(False, gap=1_200.0)) == [(0, 5_000, 0), (0, 5_600, 0), (0, 6_100, 0)]
    # a TTL chosen by the user wins over the log's
    assert _rows(_session(True), Setup(cache_ttl="5m")) == [(0, 5_000, 0), (5_000, 600, 0), (5_600, 500, 0)]
    assert _rows(_session(True), Setup(cache="anthropic:ttl=5m"))[0] == (0, 5_000, 0)
    assert _rows(_session(False), Setup(cache_ttl="1h"))[0] == (0, 0, 5_000)


def test_one_hour_writes_bill_twice_the_input_price():
    def cost(writes_1h: bool) -> float:
        replayer = Replayer(Trace("t", (_session(writes_1h),)),
                            MessageSizer(TokenCounter(get_tokenizer("chars4")), EXACT), Setup())
        return float(replayer.run(parse_policy("none")).totals.cost_usd)

    # Sonnet 4.5: input $3 / MTok, 5-minute writes 1.25x, 1-hour writes 2x, reads 0.1x, output $15:
    # 6,100 written, 10,600 read, 300 out
    assert abs(cost(False) - (6_100 * 3.75 + 10_600 * 0.30 + 300 * 15) / 1e6) < 1e-9
    assert abs(cost(True) - (6_100 * 6.00 + 10_600 * 0.30 + 300 * 15) / 1e6) < 1e-9


@pytest.mark.parametrize(("model", "family", "keeps"), [
    ("claude-sonnet-4-5-20250929", ("sonnet", (4, 5)), False),
    ("claude-haiku-4-5-20251001", ("haiku", (4, 5)), False),  # "all Haiku models"
    ("claude-opus-4-1-20250805", ("opus", (4, 1)), False),
    ("claude-opus-4-20250514", ("opus", (4, 0)), False),  # the date is not a minor version
    ("claude-3-7-sonnet-latest", ("sonnet", (3, 7)), False),
    ("claude-opus-4-5-20251101", ("opus", (4, 5)), True),
    ("claude-sonnet-4-6", ("sonnet", (4, 6)), True),
    ("claude-opus-4-8", ("opus", (4, 8)), True),  # newer than any list: its family's rule
    ("claude-sonnet-5", ("sonnet", (5, 0)), True),
    ("claude-fable-5-1", ("fable", (5, 1)), True),
    ("anthropic/claude-sonnet-4.6", ("sonnet", (4, 6)), True),  # a router's spelling
    ("us.anthropic.claude-opus-4-6-v1:0", ("opus", (4, 6)), True),  # Bedrock's
    ("claude-opus-4-6@20260205", ("opus", (4, 6)), True),  # Vertex's
    ("claude-sonnet-4-6[1m]", ("sonnet", (4, 6)), True),  # Claude Code's 1M-context alias
])
def test_which_models_keep_earlier_thinking(model, family, keeps):
    assert claude_family(model) == family
    assert keeps_thinking(model) is keeps


def _thinking_session(model: str) -> Session:
    """System 2,000; turn 1: user 1,000, a tool call with 300 tokens of thinking, its result 400, an answer 50;
    turn 2: user 100 and its answer. Sizes by hand (content-free `extra_tokens`); the thinking text is counted
    by chars4 (1,200 characters: 300 tokens)."""
    t = T0
    msgs = [Message("user", "", ts=format_ts(t), extra_tokens=1_000),
            Message("assistant", "", ts=format_ts(t + 5), thinking="abcd" * 300, extra_tokens=20),
            Message("tool", "", ts=format_ts(t + 6), extra_tokens=400),
            Message("assistant", "", ts=format_ts(t + 10), extra_tokens=50),
            Message("user", "", ts=format_ts(t + 30), extra_tokens=100),
            Message("assistant", "", ts=format_ts(t + 35), extra_tokens=50)]
    return Session(id="s", model=model, provider="anthropic", system_tokens=2_000, tools_tokens=0,
                   messages=tuple(msgs))


def test_a_user_turn_reads_the_conversation_where_the_model_keeps_thinking():
    def reads(model: str) -> list[tuple[int, int, int]]:
        return _rows(_thinking_session(model), Setup(provider_rules=True))

    # request 1: 3,000 written; request 2: reads it, writes the thinking turn (320) and the result (400);
    # request 3 (the user turn): the whole 3,720 + 50 read back where the thinking stays ...
    kept = reads("claude-opus-4-8")
    assert kept == [(0, 3_000, 0), (3_000, 720, 0), (3_720, 150, 0)]
    # ... and where it is stripped (its 300 tokens and the message's 20 hidden ones go: the rule drops the
    # hidden reasoning tokens too), the prompt differs from the first stripped message on: only the prefix
    # before it (system + the first user message: 3,000) is read, the rest (400 + 50 + 100) written again
    stripped = reads("claude-sonnet-4-5")
    assert stripped == [(0, 3_000, 0), (3_000, 720, 0), (3_000, 550, 0)]


def test_the_long_context_premium_of_opus_4_6_ends_on_2026_03_13():
    from datetime import UTC, datetime

    from ctxsim.pricing.prices import Bill, Pricer

    pricer = Pricer("anthropic", "claude-opus-4-6")
    bill = Bill(300_000, 0, 0, 0, 1_000)  # past 200k: the whole request at 2x input, 1.5x output, before GA
    before = datetime(2026, 3, 12, tzinfo=UTC).timestamp()
    after = datetime(2026, 3, 14, tzinfo=UTC).timestamp()
    assert float(pricer.cost(bill, before)) == 300_000 * 10 / 1e6 + 1_000 * 37.5 / 1e6  # $5 / $25 doubled, 1.5x
    assert float(pricer.cost(bill, after)) == 300_000 * 5 / 1e6 + 1_000 * 25 / 1e6  # flat across the 1M window


def test_a_gemini_session_caches_under_the_minimum_of_its_own_date():
    from datetime import UTC, datetime

    from ctxsim.replay.engine import resolve

    def minimum(day: datetime) -> int:
        t = day.timestamp()
        msgs = (Message("user", "", ts=format_ts(t), extra_tokens=1_500),
                Message("assistant", "", ts=format_ts(t + 1), extra_tokens=10))
        session = Session(id="g", model="gemini-2.5-flash", provider="google", messages=msgs)
        return int(resolve(Trace("t", (session,)), Setup())[0].cache.params.min_tokens)

    assert minimum(datetime(2026, 6, 1, tzinfo=UTC)) == 1_024
    assert minimum(datetime(2026, 11, 1, tzinfo=UTC)) == 2_048  # the table updated 2026-10-13


def test_openai_reads_into_the_previous_response():
    t = T0
    msgs = (Message("user", "", ts=format_ts(t), extra_tokens=3_000),
            Message("assistant", "", ts=format_ts(t + 2), extra_tokens=500),
            Message("user", "", ts=format_ts(t + 10), extra_tokens=200),
            Message("assistant", "", ts=format_ts(t + 12), extra_tokens=100))
    session = Session(id="o", model="gpt-4o", provider="openai", messages=msgs)
    # request 2 (3,700 tokens) shares the first prompt (3,000) and its response (500): 3,500 -> 27 steps of 128
    assert _rows(session) == [(0, 0, 0), (3_456, 0, 0)]
    # a policy that changed the response (here the same history cut back at the response) reads the prompt only:
    # 3,000 -> 2,944 (the 1,024 minimum plus 15 steps of 128)
    from ctxsim.caching import cache_spec
    from ctxsim.history import History, Item

    cache = cache_spec("openai").build("gpt-4o")
    history = History(0, lambda m: m.extra_tokens, lambda m: 1)
    history.append(Item(msgs[0], 3_000, 1, 0))
    cache.request(history, t)
    history.append(Item(msgs[1], 500, 1, 1))
    history.append(Item(msgs[2], 200, 1, 2))
    cache.edited(1)
    assert cache.request(history, t + 10)[0].read_tokens == 2_944


def test_a_model_switch_mid_session_reads_each_models_own_cache():
    t = T0
    msgs = []
    for k, model in enumerate(("claude-opus-4-6", "claude-opus-4-6", "claude-haiku-4-5", "claude-haiku-4-5",
                               "claude-opus-4-6")):
        msgs.append(Message("user", "", ts=format_ts(t), extra_tokens=3_000 if k == 0 else 300))
        msgs.append(Message("assistant", "", ts=format_ts(t + 5), extra_tokens=100, model=model))
        t += 10
    session = Session(id="m", model="claude-opus-4-6", provider="anthropic", system_tokens=5_000, tools_tokens=0,
                      messages=tuple(msgs))
    # prompts 8,000 / 8,400 / 8,800 / 9,200 / 9,600: the first Haiku request is cold (writes its whole prompt),
    # the second reads it; back on Opus, the request reads Opus's own last entry (8,400) and writes the rest
    assert _rows(session) == [(0, 8_000, 0), (8_000, 400, 0), (0, 8_800, 0), (8_800, 400, 0), (8_400, 1_200, 0)]
