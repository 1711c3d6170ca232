"""The yoagent preset reproduces yoagent's published prefix-cache replay.

Golden numbers come from reference/yoagent-context.md: the docs' table (section 4.1:
300 turns give 95.69 % and 8 rewrites), the per-turn spot values (section 4.3) and
the f32 target (section 2.4). ctxsim makes one request per assistant message, so
yoagent's "turn N" (measured after turn N's tool result) is ctxsim request N + 1.
"""

from __future__ import annotations

import pytest

from ctxsim.caching.rendered import common_prefix, render
from ctxsim.model import Message, ToolCall
from ctxsim.policies import parse_policy
from ctxsim.policies.tiered import TieredPolicy, f32
from ctxsim.presets import presets
from ctxsim.presets.yoagent import FRAMING, PRESET, PUBLISHED, Stages, replay_yoagent, sizer
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.synth import synthesize
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import MessageSizer


@pytest.fixture(scope="module")
def yo300():
    return replay_yoagent(300)


def test_preset_is_registered_with_the_yoagent_setup():
    preset = presets()["yoagent"]
    assert preset is PRESET
    assert (preset.tokenizer, preset.cache, preset.window) == ("bytes4", "rendered", 128_000)
    assert preset.stages == ("truncate", "tiered:compact_at=turn_end")
    assert "openhands" in presets()


def test_300_turns_match_the_published_hit_rate_and_rewrites(yo300):
    published_hit, published_rewrites = PUBLISHED[(300, 0.15)]  # docs: 95.69 %, 8 rewrites
    totals = yo300.run.totals
    assert totals.requests == 300
    assert totals.rewrites == published_rewrites == 8
    assert yo300.ledger.rewrites == 8
    # yoagent's own metric, byte-weighted over the rendered requests
    assert abs(100 * yo300.byte_hit_rate - published_hit) < 0.05
    # ctxsim's run total: cache_read_tokens / input_tokens from the `rendered` cache model
    assert abs(100 * totals.hit_rate - published_hit) < 0.05
    # every compaction is level 2 or 3 (5 and 3 at 300 turns, reference section 4.2)
    kinds = [e.kind for e in yo300.run.events if e.policy == "tiered"]
    assert kinds.count("summarize") == 5 and len(kinds) - kinds.count("summarize") == 3


def test_compactions_fall_on_the_published_turns(yo300):
    # reference section 4.2, invalidation list: turns 77 92 116 180 193 218 280 289
    requests = [r.request for r in yo300.run.rows if r.rewrite]
    assert [n - 1 for n in requests] == [77, 92, 116, 180, 193, 218, 280, 289]


def test_turn_77_collapses_under_level_2(yo300):
    # reference section 4.3: turn 77 live 103,853 -> 9,440 tokens after L2, 98 messages,
    # request 37,034 bytes sharing 41 with the previous one ("<user><text>Refactor the provider layer." + "<")
    row = yo300.run.rows[77]
    assert row.request == 78
    event = next(e for e in yo300.run.events if e.request == 78 and e.policy == "tiered")
    assert event.kind == "summarize"
    assert (event.tokens_before, event.tokens_after) == (103_853, 9_440)
    assert (row.context_tokens, row.messages) == (9_440, 98)
    assert yo300.ledger.per_request[77] == (37_034, 41)
    assert row.rewrite
    # 41 shared bytes: the whole task message (11 tokens) and one byte of the next message
    assert row.cache_read_tokens == 11
    # turn 76 and 78 are append-only
    assert yo300.ledger.per_request[76] == (383_594, 383_390)
    assert yo300.ledger.per_request[78] == (66_571, 37_034)


def test_first_turns_match_the_spot_values(yo300):
    # reference section 4.3, turns 1-4 and 6 (live tokens, request bytes, shared bytes);
    # turn 5 differs by its user message, which ctxsim puts into the request before it
    rows, per = yo300.run.rows, yo300.ledger.per_request
    assert [rows[n].context_tokens for n in (1, 2, 3, 5)] == [1051, 2575, 4589, 9740]
    assert [per[n] for n in (2, 3, 5)] == [(10242, 4172), (18273, 10242), (38817, 28315)]
    assert per[1][0] == 4172


class GrowthSpy:
    """Wraps `tiered` and records, per request, its growth, effective ratio and target."""

    def __init__(self, inner: TieredPolicy) -> None:
        self.inner, self.name, self.params = inner, inner.name, inner.params
        self.seen: list[tuple[int, float, float, int]] = []

    def decide(self, ctx):
        edits = self.inner.decide(ctx)
        budget = self.inner.budget(ctx)
        ratio = self.inner.effective_ratio(self.inner.growth, budget)
        self.seen.append((ctx.request, self.inner.growth, ratio, self.inner.target(budget, ratio)))
        return edits


def test_growth_ratio_and_target_follow_the_spot_values():
    trace = synthesize("yoagent", turns=7)
    spy = GrowthSpy(parse_policy("tiered:compact_at=turn_end"))  # type: ignore[arg-type]
    Replayer(trace, sizer(), Setup(cache="rendered", window=128_000)).run(
        Stages("yoagent", (parse_policy("truncate"), spy)))  # type: ignore[arg-type]
    by_turn = {request - 1: rest for request, *rest in spy.seen}
    # reference section 4.3: (growth, ratio, target) at turns 1, 2, 3, 4, 6
    expected = {1: (0.0, 0.7, 68879), 2: (1524.0, 0.5354, 52680), 3: (1769.0, 0.4607, 45330),
                4: (2014.3, 0.3859, 37969), 6: (2264.2, 0.3097, 30474)}
    for turn, (growth, ratio, target) in expected.items():
        got_growth, got_ratio, got_target = by_turn[turn]
        assert got_growth == pytest.approx(growth, abs=0.05)
        assert got_ratio == pytest.approx(ratio, abs=5e-5)
        assert got_target == target


def test_f32_target_for_the_default_ratio():
    # reference section 2.4: 0.7 as f32 is 0.699999988..., so the 98,400 target is 68,879, not 68,880
    assert f32(0.7) < 0.7
    assert TieredPolicy.target(98_400, f32(0.7)) == 68_879
    assert TieredPolicy.target(98_400, 0.7) == 68_880


def test_framing_reproduces_yoagent_block_overheads():
    counter = MessageSizer(TokenCounter(get_tokenizer("bytes4")), FRAMING)
    call = ToolCall("tc-1", "bash", {"arg": "target-1"})
    assistant = Message("assistant", "Turn 1: inspecting the workspace before the next edit.", tool_calls=(call,))
    # hand check: 4 + ceil(54/4)=14 + [ceil(4/4)=1 + ceil(18/4)=5 + 8] = 32 (the reference's 32-token assistant)
    assert counter.message(assistant) == 32
    result = Message("tool", "x" * 10, tool_call_id="tc-1", name="edit_file")
    # ceil(10/4)=3 + ceil(9/4)=3 + 8, no +4
    assert counter.message(result) == 14
    assert counter.message(Message("user", "Refactor the provider layer.")) == 4 + 7


def test_render_matches_yoagent_bytes():
    call = ToolCall("tc-1", "bash", {"arg": "target-1"})
    text = render(Message("assistant", "hi", tool_calls=(call,)))
    assert text == b'<assistant><text>hi<tool_use id=tc-1 bash>{"arg":"target-1"}'
    assert render(Message("tool", "out", tool_call_id="tc-1", name="bash", is_error=True)) == \
        b"<tool_result id=tc-1 error><text>out"
    assert len(render(Message("user", "Refactor the provider layer."))) == 40
    assert common_prefix(b"abcdef", b"abcxyz") == 3 and common_prefix(b"ab", b"ab") == 2


def test_longer_sessions_and_the_030_floor():
    # reference 4.1/4.2: 1200 turns 95.39 % / 35, 2400 turns 95.27 % / 70, and 95.30 % / 70 with floor 0.30
    for (turns, floor), (hit, rewrites) in PUBLISHED.items():
        if turns == 300:
            continue
        result = replay_yoagent(turns, floor)
        assert result.run.totals.rewrites == rewrites, (turns, floor)
        assert abs(100 * result.byte_hit_rate - hit) < 0.05, (turns, floor)
        assert abs(100 * result.run.totals.hit_rate - hit) < 0.05, (turns, floor)


def test_the_native_file_round_trip_replays_the_same(tmp_path, yo300):
    # `ctxsim synth --profile yoagent --turns 300 -o FILE` then the preset: same run as in memory
    from ctxsim._support.fileio import atomic_write
    from ctxsim.formats import native, read_trace

    path = tmp_path / "yoagent-300.jsonl"
    with atomic_write(path) as out:
        native.write(synthesize("yoagent", turns=300), out)
    again = replay_yoagent(300, trace=read_trace(str(path)))
    assert again.run.totals == yo300.run.totals
    assert again.ledger.per_request == yo300.ledger.per_request
