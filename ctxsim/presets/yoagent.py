"""The `yoagent` preset: yoagent 0.15-0.21's context management and its replay metric.

Source: reference/yoagent-context.md (yoagent `src/context.rs`, `tests/context_cache_test.rs`,
`docs/concepts/prompt-caching.md`). Set-up:

- tokens: `bytes4` (ceil(UTF-8 bytes / 4) per block) with yoagent's per-block
  overheads: user and assistant messages +4, a tool call est(name) + est(JSON) + 8,
  a tool result est(tool name) + 8 and no +4. The existing `Framing` fields express
  that exactly (message 4, tool call 8, tool result 4 more, result name counted);
- window 128K, so the tiered budget is 80% of it (102,400) less the 4,000 reserved
  for the system prompt: 98,400;
- stages: `truncate` (200 lines on append, read_file exempt), then `tiered` with
  yoagent's defaults, compacting at the end of each turn as the replay test does;
- cache: `rendered`, the ideal byte-prefix cache of the replay test.

`replay_yoagent(turns)` runs the preset on `ctxsim synth --profile yoagent` and
returns both metrics: ctxsim's run totals (`cache_read_tokens / input_tokens`,
rewrites = requests whose message prefix changed) and yoagent's own byte-weighted
hit rate, measured by a probe stage that renders every request as it is sent.

Where ctxsim's replay differs from the test's loop, and why the figures still agree:
ctxsim makes one request per assistant message, so its first request is the lone
task (the test has none) and the request after the last turn is not made (the
test makes it); and the user message that opens turn N is part of ctxsim's
request for turn N's reply, while the test's measurement after turn N-1 comes
before that message arrives. With
`compact_at=turn_end` the compaction sees exactly the test's history at every
turn, so the compactions fall on the same turns; only the metering differs,
by less than 0.01 points of hit rate at 300 to 2,400 turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxsim.caching.rendered import ByteLedger, RenderedTracker
from ctxsim.policies import NoParams, Stages
from ctxsim.presets import Preset, register
from ctxsim.tokens.counting import Framing, MessageSizer

if TYPE_CHECKING:  # the engine imports the policies; load it only when a replay runs
    from ctxsim.model import Trace
    from ctxsim.policies.base import Context, Edit
    from ctxsim.replay.engine import PolicyRun

FRAMING = Framing(message_tokens=4, tool_call_tokens=8, tool_result_tokens=4, count_tool_result_name=True,
                  count_call_name=True)
WINDOW = 128_000
STAGES = ("truncate", "tiered:compact_at=turn_end")

# docs/concepts/prompt-caching.md, context-management.md, CHANGELOG 0.15.0 (reference section 4.1);
# the 0.30-floor row is the reference's reproduction with MIN_HEADROOM_RATIO = 0.30 (section 4.2).
PUBLISHED: dict[tuple[int, float], tuple[float, int]] = {
    (300, 0.15): (95.69, 8),
    (1200, 0.15): (95.39, 35),
    (2400, 0.15): (95.27, 70),
    (2400, 0.30): (95.30, 70),
}

PRESET = Preset(
    name="yoagent",
    summary="yoagent 0.15-0.21: append-time 200-line cap, tiered L1-L3 compaction with headroom, byte-prefix cache",
    source="yoagent src/context.rs + tests/context_cache_test.rs (reference/yoagent-context.md)",
    stages=STAGES,
    tokenizer="bytes4",
    framing=FRAMING,
    cache="rendered",
    window=WINDOW,
    notes=(
        "budget 98,400 = 80% of 128K (102,400) - 4,000 system reserve; target = budget x adaptive ratio (f32)",
        "compaction runs at each turn's end, as yoagent's replay test does (tiered compact_at=turn_end)",
        "hit rate: cache_read/input in tokens; yoagent's byte-weighted rate is reported by replay_yoagent",
    ),
    module=__name__,
)
register(PRESET)


class BytesProbe:
    """A last stage that edits nothing and meters each request's rendering in bytes (yoagent's metric)."""

    name = "bytes-probe"
    params: Any = NoParams()

    def __init__(self) -> None:
        self.tracker = RenderedTracker()
        self.ledger = ByteLedger()
        self._items: list[Any] = []

    def decide(self, ctx: Context) -> Sequence[Edit]:
        items = ctx.items
        same = 0
        limit = min(len(items), len(self._items))
        while same < limit and items[same] is self._items[same]:
            same += 1
        self.tracker.edited(same)
        first = not self.tracker.seen
        total, previous, where = self.tracker.request(items)
        self.ledger.add(total, 0 if first else where.shared_bytes, previous)
        self._items = list(items)
        return ()


@dataclass
class YoagentReplay:
    turns: int
    run: PolicyRun
    ledger: ByteLedger

    @property
    def byte_hit_rate(self) -> float:
        return self.ledger.hit_rate


def sizer() -> MessageSizer:
    from ctxsim.tokens import TokenCounter, get_tokenizer

    return MessageSizer(TokenCounter(get_tokenizer(PRESET.tokenizer or "bytes4")), PRESET.framing)


def policy(min_headroom_ratio: float = 0.15, probe: BytesProbe | None = None) -> Stages:
    """The preset's stages (with the given headroom floor), plus an optional probe at the end."""
    from ctxsim.policies import parse_policy

    specs = [s if not s.startswith("tiered") else f"{s},min_headroom_ratio={min_headroom_ratio}" for s in STAGES]
    stages = tuple(parse_policy(s) for s in specs) + ((probe,) if probe is not None else ())
    return Stages("yoagent", stages)


def replay_yoagent(turns: int, min_headroom_ratio: float = 0.15, trace: Trace | None = None) -> YoagentReplay:
    """`ctxsim synth --profile yoagent --turns N` (or `trace`) replayed under the preset."""
    from ctxsim.replay.engine import Replayer, Setup
    from ctxsim.synth import synthesize

    if trace is None:
        trace = synthesize("yoagent", turns=turns)
    probe = BytesProbe()
    replayer = Replayer(trace, sizer(), Setup(cache=PRESET.cache, window=PRESET.window))
    run = replayer.run(policy(min_headroom_ratio, probe))
    return YoagentReplay(turns, run, probe.ledger)
