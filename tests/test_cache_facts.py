"""The cache side of issue 17: the provider's recorded cache behaviour replayed as facts, and provider rules.

- a recorded read that drops mid-session (a break): the `none` replay reads as recorded, a policy that
  dropped earlier content reads min(its own read, the recorded ceiling), the cache's state after it is the
  model's (the next request reads as the model says);
- a read kept warm past the model's TTL (a floor), and the cold / warm first request;
- the calibration finds the facts on a trace whose usage ctxsim's own engine made, then a provider miss
  put into it; the cost range's low end is the model without them;
- DeepSeek's 64-token units and reads into the previous response;
- a model whose price data has no cache-read price gets no cache reads.

Every size is set by hand (content-free messages with `extra_tokens`, no framing), so the numbers are
worked out in the comments.
"""

from __future__ import annotations

from dataclasses import replace

from ctxsim.analysis import cache_anchor
from ctxsim.analysis.calibrate import calibration
from ctxsim.analysis.validate import validate, validation_tables
from ctxsim.caching import CacheResult, cache_spec
from ctxsim.caching.recorded import FACTS_KEY, RecordedFacts, capped
from ctxsim.history import History, Item
from ctxsim.model import Message, Session, Trace, Usage, format_ts
from ctxsim.policies import NoParams, parse_policy
from ctxsim.policies.base import Drop, Edit, View
from ctxsim.replay.engine import Replayer, Setup, default_cache, resolve
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import Framing, MessageSizer

T0 = 1_768_323_360.0  # 2026-01-13
EXACT = Framing(message_tokens=0, tool_call_tokens=0, tool_result_tokens=0)
SYSTEM = 2_000


def _msg(role: str, tokens: int, at: float) -> Message:
    return Message(role, "", ts=format_ts(at), extra_tokens=tokens)


def _session(extra: dict | None = None, gap: float = 10.0, model: str = "claude-sonnet-4-5",
             provider: str = "anthropic") -> Session:
    """user 3,000 / a 100 / user 500 / a 100 / user 400 / a 100 / user 300 / a 100, system 2,000: the four
    requests' prompts are 5,000, 5,600, 6,100 and 6,500 tokens."""
    t = T0
    messages = []
    for user in (3_000, 500, 400, 300):
        messages.append(_msg("user", user, t))
        t += gap
        messages.append(_msg("assistant", 100, t))
        t += 1
    return Session(id="s", model=model, provider=provider, system_tokens=SYSTEM, tools_tokens=0,
                   messages=tuple(messages), extra=extra or {})


def _reads(session: Session, policy=None) -> list[tuple[int, int]]:  # (read, written) per request
    replayer = Replayer(Trace("t", (session,)), MessageSizer(TokenCounter(get_tokenizer("chars4")), EXACT), Setup())
    run = replayer.run(policy or parse_policy("none"))
    return [(r.cache_read_tokens, r.cache_write_tokens) for r in run.rows if r.kind == "request"]


class DropSecondUser:
    """At request 3, drops the second user message (500 tokens): the prompt's cache breaks after the first."""

    name = "drop-second-user"
    params = NoParams()

    def decide(self, view: View) -> list[Edit]:
        if view.request != 3:
            return []
        users = [item for item in view.items if item.message.role == "user"]
        return [Edit("drop", (Drop((users[1],)),), "test")]


def test_the_model_alone():
    # Anthropic, breakpoints after the system prompt and at the last message: each request reads the previous
    # request's whole prompt and writes the rest
    assert _reads(_session()) == [(0, 5_000), (5_000, 600), (5_600, 500), (6_100, 400)]
    # the policy's request 3: 5,600 tokens; only the entry after the first user message (5,000) survives the drop
    assert _reads(_session(), DropSecondUser()) == [(0, 5_000), (5_000, 600), (5_000, 600), (5_600, 400)]


def test_a_recorded_break_caps_every_policy_and_leaves_the_state_as_the_model_has_it():
    facts = {FACTS_KEY: {3: (2_000, None)}}  # request 3 recorded only the system prompt read
    # none: request 3 reads 2,000 and writes the other 4,100; request 4 reads everything request 3 wrote
    assert _reads(_session(facts)) == [(0, 5_000), (5_000, 600), (2_000, 4_100), (6_100, 400)]
    # the policy's own read (5,000) is above the ceiling: min(5,000, 2,000); 5,600 - 2,000 = 3,600 written
    assert _reads(_session(facts), DropSecondUser()) == [(0, 5_000), (5_000, 600), (2_000, 3_600), (5_600, 400)]
    # a ceiling above a policy's own read leaves it: none reads 5,500 of 5,600 possible, the policy its 5,000
    high = {FACTS_KEY: {3: (5_500, None)}}
    assert _reads(_session(high))[2] == (5_500, 600)
    assert _reads(_session(high), DropSecondUser())[2] == (5_000, 600)


def test_a_kept_warm_prefix_is_read_after_the_model_expired_it():
    cold = _session(gap=600.0)  # ten minutes between requests: the 5-minute entries expire, every request writes
    assert _reads(cold) == [(0, 5_000), (0, 5_600), (0, 6_100), (0, 6_500)]
    # the log recorded the system prompt read at request 2 (kept warm by requests the log does not hold)
    warm = replace(cold, extra={FACTS_KEY: {2: (None, 2_000)}})
    assert _reads(warm) == [(0, 5_000), (2_000, 3_600), (0, 6_100), (0, 6_500)]
    # a floor is no larger than what the request still shares with the previous prompt and its response
    # (5,000 + 100): the recorded 9,000 (cached by another session) cannot be read here
    assert _reads(replace(cold, extra={FACTS_KEY: {2: (None, 9_000)}}))[1] == (5_100, 500)


def test_a_recorded_uncached_tail_is_written_less():
    # request 2 recorded 300 tokens sent uncached (its last breakpoint before the prompt's end): of the model's
    # 600 written, 300 go fresh; request 3 still reads as the model has it (the next ceiling would say otherwise)
    facts = {FACTS_KEY: {2: (None, None, 300)}}
    assert _reads(_session(facts)) == [(0, 5_000), (5_000, 300), (5_600, 500), (6_100, 400)]
    # with a ceiling too: 2,000 read, 3,600 would be written, 300 of them fresh
    both = {FACTS_KEY: {2: (2_000, None, 300)}}
    assert _reads(_session(both))[1] == (2_000, 3_300)


def test_a_warm_first_request_and_a_later_break_together():
    session = _session({"warm_start_tokens": SYSTEM, FACTS_KEY: {3: (2_000, None)}})
    # the first request reads the warm 2,000 (WarmStart), request 3 is capped (RecordedFacts): both apply
    assert _reads(session) == [(2_000, 3_000), (5_000, 600), (2_000, 4_100), (6_100, 400)]


def test_the_warm_answer_is_the_models_own():
    inner = cache_spec("prefix").build(None)
    history = History(1_000, lambda m: m.extra_tokens, lambda m: 1)
    facts = RecordedFacts(inner, {2: (100, None)})
    facts.request(history, None)
    history.append(Item(_msg("assistant", 50, T0), 50, 1, 0))
    real, warm = facts.request(history, None)
    assert real == CacheResult(100, 0, 0)  # prefix bills no writes: the 950 tokens no longer read go fresh
    assert warm == CacheResult(1_000, 0, 0)  # never cold, no ceiling: the cost range's low end
    assert facts.moved_down == 900
    assert capped(CacheResult(1_000, 10, 0), 400, True, hour=True) == CacheResult(400, 10, 600)


# ---------------------------------------------------------------- the calibration finds them


def _billed_trace(miss_at: int = 3, read: int = SYSTEM) -> Trace:
    """A session billed as ctxsim's engine replays it (sizes scaled 1.25 x, 12 tokens a message: inside the
    priors), then a provider miss at request `miss_at`: it read `read` tokens and wrote the rest."""
    t = T0
    messages = []
    for k in range(1, 9):
        messages.append(Message("user", "abcd" * (150 * k), ts=format_ts(t)))
        t += 15
        messages.append(Message("assistant", "wxyz" * 40, ts=format_ts(t)))
        t += 5
    truth = Session(id="s", model="claude-sonnet-4-5", provider="anthropic", system_tokens=SYSTEM, tools_tokens=0,
                    messages=tuple(messages))
    sizer = MessageSizer(TokenCounter(get_tokenizer("chars4")),
                         Framing(message_tokens=12, tool_call_tokens=0, tool_result_tokens=0, scale=1.25))
    run = Replayer(Trace("truth", (truth,)), sizer, Setup()).run(parse_policy("none"))
    rows = iter(r for r in run.rows if r.kind == "request")
    billed = []
    index = 0
    for m in messages:
        if m.role == "assistant":
            index += 1
            r = next(rows)
            reads, writes = r.cache_read_tokens, r.cache_write_tokens
            if index == miss_at:
                reads, writes = read, writes + reads - read
            billed.append(replace(m, usage=Usage(r.input_tokens, reads, writes, 0, 40)))
        else:
            billed.append(m)
    # the log holds no system prompt: the calibration finds it as the hidden prefix
    return Trace("billed", (replace(truth, system_tokens=None, messages=tuple(billed)),))


def test_the_calibration_records_the_break_and_the_replay_reads_as_billed():
    trace = _billed_trace()
    cal = calibration(trace, "chars4")
    # the ceiling, with the model's own read there (the reference a policy's replay transfers the miss from)
    assert list(cal.cache_facts) == ["s"] and list(cal.cache_facts["s"]) == [3]
    fact = cal.cache_facts["s"][3]
    assert fact[:3] == (SYSTEM, None, None)
    reference = fact[3]
    assert reference is not None and reference > SYSTEM
    assert cal.warm_start_tokens == {}  # a cold first request: no warm start, and never a fact (WarmStart's)
    # carried on the session for every replay of the calibrated trace (replay, compare: any policy)
    assert cal.apply(trace).sessions[0].extra[FACTS_KEY] == {3: fact}
    assert FACTS_KEY not in trace.sessions[0].extra
    assert cal.quality["cache_ceilings"] == 1 and cal.quality["cache_floors"] == 0
    result = validate(trace, "chars4", calibration=cal)
    by_index = {c.index: c for c in result.checks}
    assert by_index[3].simulated_cache_read_tokens == SYSTEM == by_index[3].recorded_cache_read_tokens
    # request 4 reads the whole of request 3's prompt, as the model (and the provider) did
    assert abs(by_index[4].simulated_cache_read_tokens - by_index[4].recorded_cache_read_tokens) <= 8
    # what the ceiling took: the model's read at request 3 (the unbroken bill's read, within the fit's rounding)
    whole = [m.usage.cache_read_tokens for m in _billed_trace(miss_at=0).sessions[0].messages if m.usage][2]
    assert abs(cal.cache_facts_moved["down"] - (whole - SYSTEM)) <= 16
    assert cal.cache_facts_moved["down"] == reference - SYSTEM  # the `none` replay read its reference
    assert cal.cache_facts_moved["up"] == 0
    manifest = cal.to_json()["cache_facts"]
    assert manifest["ceilings"] == 1 and manifest["by_session"] == {"s": {"3": [SYSTEM, None, None, reference]}}
    assert any("capped at the recorded read" in n for n in cal.notes)
    tables, _ = validation_tables(validate(trace, "chars4", calibration=cal))
    said = [r[1] for t in tables for r in t.rows if r[0] == "recorded cache facts (for every policy)"]
    assert said == [(f"1 read ceiling(s) ({cal.cache_facts_moved['down']:,} tokens), 0 floor(s) (0 tokens), "
                    "0 uncached tail(s) (0 tokens)")]
    # the point estimate is the bill within a few tokens' price, inside the range; the low end is the model alone
    low, high = result.cost_range_usd
    assert low <= result.simulated_cost <= high
    assert abs(result.simulated_cost - result.recorded_cost) / result.recorded_cost < 0.005
    alone = validate(trace, "chars4", calibration=replace(cal, cache_facts={}))
    assert alone.simulated_cost < result.simulated_cost and low <= alone.simulated_cost


def test_no_facts_without_a_break_and_none_uncalibrated():
    trace = _billed_trace(miss_at=0)
    assert calibration(trace, "chars4").cache_facts == {}
    # ceilings come from the calibration only: uncalibrated, the broken and the unbroken bill replay alike
    raw = validate(_billed_trace(), "chars4", calibrate=False)
    plain = validate(trace, "chars4", calibrate=False)
    assert [c.simulated_cache_read_tokens for c in raw.checks] == [c.simulated_cache_read_tokens for c in plain.checks]
    assert [c.simulated_cost_usd for c in raw.checks] == [c.simulated_cost_usd for c in plain.checks]


def test_session_facts_skip_the_first_request_and_scale_the_model_to_billed_tokens():
    class R:  # the two fields session_facts reads, as calibrate.Request carries them
        def __init__(self, index, rec_in, rec_read, sim_in, sim_read, out=50):
            self.index = index
            self.recorded = Message("assistant", "", usage=Usage(rec_in, rec_read, 0, 0, out))
            self.row = type("Row", (), {"input_tokens": sim_in, "cache_read_tokens": sim_read})()

    requests = [R(1, 5_000, 4_000, 5_000, 0),  # a warm first request: WarmStart's business, not a fact
                R(2, 6_000, 5_450, 6_600, 5_500),  # 5,500 x 5,000 / 5,000: 50 tokens apart, within 128: none
                R(3, 7_000, 3_000, 7_700, 6_600),  # 6,600 x 6,000 / 6,600 = 6,000 billed; read 3,000: a ceiling
                R(4, 7_500, 6_950, 8_200, 0)]  # expired in the model; 6,950 <= 7,000 + 50: a floor
    # a ceiling keeps the model's own read (replay tokens: what the `none` replay reads there, so that it
    # transfers to exactly the ceiling); a floor has none
    assert cache_anchor.session_facts(requests) == {3: (3_000, None, None, 6_600), 4: (None, 6_950, None, None)}


# ---------------------------------------------------------------- provider rules


def _history(base: int) -> History:
    return History(base, lambda m: m.extra_tokens, lambda m: 1)


def test_deepseek_reads_64_token_units_into_the_previous_response():
    cache = cache_spec("deepseek").build("deepseek-chat")
    history = _history(100)
    history.append(Item(_msg("user", 1_000, T0), 1_000, 1, 0))
    assert cache.request(history, T0) == CacheResult(0, 0, 0)  # cold
    history.append(Item(_msg("assistant", 130, T0), 130, 1, 1))
    history.append(Item(_msg("user", 500, T0), 500, 1, 2))
    # prompt 1,730; shared: 100 + 1,000 + the response 130 = 1,230 -> 19 units of 64 = 1,216
    assert cache.request(history, T0) == CacheResult(1_216, 0, 0)
    history.append(Item(_msg("assistant", 70, T0), 70, 1, 3))
    cache.edited(1)  # the history changed after the first message: 1,100 shared -> 17 units = 1,088
    assert cache.request(history, T0).read_tokens == 1_088
    short = cache_spec("deepseek").build("deepseek-chat")
    tiny = _history(50)
    short.request(tiny, T0)
    assert short.request(tiny, T0).read_tokens == 0  # under one unit: not cached
    assert default_cache("deepseek", "deepseek-chat") == "deepseek"


def test_a_deepseek_trace_replays_with_the_deepseek_cache():
    session = _session(model="deepseek-chat", provider="deepseek")
    assert resolve(Trace("t", (session,)), Setup())[0].cache.name == "deepseek"
    # 5,000 then 5,000 + 100 = 5,100 shared -> 79 units = 5,056; 5,600 + 100 -> 5,696; 6,200 -> 6,144
    assert _reads(session) == [(0, 0), (5_056, 0), (5_696, 0), (6_144, 0)]


def test_a_model_without_a_cache_read_price_gets_no_cache_reads():
    # mistral-small had no cache-read price in the price data in September 2025
    t = 1_758_026_593.0  # 2025-09-16
    messages = (Message("user", "", ts=format_ts(t), extra_tokens=2_000),
                Message("assistant", "", ts=format_ts(t + 1), extra_tokens=10, usage=Usage(2_000, 0, 0, 0, 10)),
                Message("user", "", ts=format_ts(t + 2), extra_tokens=300),
                Message("assistant", "", ts=format_ts(t + 3), extra_tokens=10, usage=Usage(2_310, 0, 0, 0, 10)))
    session = Session(id="m", model="mistral-small-latest", provider="mistral", messages=messages)
    assert resolve(Trace("t", (session,)), Setup())[0].cache.name == "none"
    assert [read for read, _ in _reads(session)] == [0, 0]
    # the same trace recording a cache read: the provider did cache; the usual default (prefix) applies
    read = replace(messages[3], usage=Usage(2_310, 2_000, 0, 0, 10))
    recorded = replace(session, messages=(*messages[:3], read))
    assert resolve(Trace("t", (recorded,)), Setup())[0].cache.name == "prefix"
    # a cache model chosen by name is kept
    assert resolve(Trace("t", (session,)), Setup(cache="prefix"))[0].cache.name == "prefix"
