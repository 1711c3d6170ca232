"""Every registered policy's work per request is bounded by what changed, not by the trace length.

No timings: the replay runs on a history whose `items` and `log` lists count the elements a
policy reads from them while it decides (or rewrites a message on append). A policy that walks
the whole history on every request reads O(n) elements per request, so on a trace with 4x the
turns its largest request reads ~4x as much and the whole run ~16x as much. A policy that looks
only at what arrived, at what it edits, or at a context it keeps bounded reads about as much on
its largest request on both traces, and ~4x in total. The checks: largest request at most 2x,
total at most 8x.

Each policy gets specs that make it act early on both synthetic traces (the coding profile, every
assistant message given some thinking so that `clear_thinking` acts too). What a policy reads
from its own state is not counted; the policies keep only what is bounded by the context or by
what arrived since they last decided. A stateful policy behind a stage that edits the history at
every request (scored after mask) follows those edits through the history's journal.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

import ctxsim.replay.engine as engine
from ctxsim.history import History
from ctxsim.model import Trace
from ctxsim.policies import NoParams, policies
from ctxsim.policies.spec import resolve
from ctxsim.synth import synthesize
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import MessageSizer

SMALL, BIG = 300, 1200

# Specs for every registered policy, chosen so that each acts on both traces (chars4 tokens).
SPECS: dict[str, list[str]] = {
    "none": ["none"],
    "oracle": ["oracle:budget=30000"],
    "clear": ["clear:trigger=30000,keep=3,clear_at_least=10000"],
    "clear_thinking": ["clear_thinking"],
    "compact": ["compact:trigger=30000"],
    "hierarchical": ["hierarchical:checkpoint_every=5,epoch_every=3,era_every=2",
                     "hierarchical:checkpoint_every=5,epoch_every=0"],  # without epochs checkpoints pile up
    "mask": ["mask"],
    "notes": ["notes:max_tokens=100"],
    "pipeline": ["pipeline:stages=[clear:trigger=30000|compact:trigger=30000]", "ctxkit",
                 "truncate+tiered:max_context_tokens=40000,compact_at=turn_end",
                 # scored and truncate follow the stubs mask and clear_thinking put in at every request
                 "pipeline:stages=[clear_thinking|mask|scored:budget=40000]",
                 "mask+truncate:on_append=false,max_lines=20"],
    "recent": ["recent"],
    "amortized": ["amortized", "amortized:max_size=60,keep_first=2,summarize=true"],
    "idle_clear": ["idle_clear:gap_minutes=0.1,tools=[read_file|run_tests|bash|grep]"],
    "scored": ["scored:budget=40000", "scored:budget=40000,relevance=jaccard,recent_turns=6"],
    "server_compact": ["server_compact:trigger=50000"],
    "tiered": ["tiered:max_context_tokens=60000", "tiered:max_context_tokens=30000,keep_recent=4,keep_first=4"],
    "truncate": ["truncate:on_append=false,max_lines=20", "truncate:max_lines=20"],
    "zones": ["zones:window=60000"],
}


@dataclass
class Tally:
    on: bool = False
    read: int = 0


TALLY = Tally()


def _counted(iterator: Any) -> Any:
    for x in iterator:
        TALLY.read += 1
        yield x


class CountingList(list):  # type: ignore[type-arg]
    """A list that counts the elements read through it while TALLY.on is set."""

    def __iter__(self) -> Any:
        it = super().__iter__()
        return _counted(it) if TALLY.on else it

    def __reversed__(self) -> Any:
        it = super().__reversed__()
        return _counted(it) if TALLY.on else it

    def __getitem__(self, key: Any) -> Any:
        value = super().__getitem__(key)
        if TALLY.on:
            TALLY.read += len(value) if isinstance(key, slice) else 1
        return value

    def __contains__(self, value: object) -> bool:
        if TALLY.on:
            TALLY.read += len(self)
        return super().__contains__(value)

    def index(self, *args: Any) -> int:  # type: ignore[override]
        if TALLY.on:
            TALLY.read += len(self)
        return super().index(*args)

    def count(self, value: Any) -> int:
        if TALLY.on:
            TALLY.read += len(self)
        return super().count(value)


class CountingHistory(History):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.items = CountingList()
        self.log = CountingList()


@dataclass
class Reads:
    per_request: dict[int, int] = field(default_factory=dict)

    def add(self, request: int, n: int) -> None:
        self.per_request[request] = self.per_request.get(request, 0) + n

    @property
    def most(self) -> int:
        return max(self.per_request.values(), default=0)

    @property
    def total(self) -> int:
        return sum(self.per_request.values())


def _instrument(stage: Any, reads: Reads) -> None:
    """Count, per request, what a stage reads in decide and on_append (instance attributes shadow the methods)."""
    for hook in ("decide", "on_append"):
        inner = getattr(stage, hook, None)
        if inner is None:
            continue

        def counted(ctx: Any, *rest: Any, _inner: Any = inner) -> Any:
            before = TALLY.read
            TALLY.on = True
            try:
                return _inner(ctx, *rest)
            finally:
                TALLY.on = False
                reads.add(ctx.request, TALLY.read - before)

        setattr(stage, hook, counted)


def with_thinking(trace: Trace) -> Trace:
    sessions = []
    for s in trace.sessions:
        messages = tuple(replace(m, thinking=f"Thinking about step {i}: what the last output says.")
                         if m.role == "assistant" else m for i, m in enumerate(s.messages))
        sessions.append(replace(s, messages=messages))
    return replace(trace, sessions=tuple(sessions))


@pytest.fixture(scope="module")
def traces() -> dict[int, Trace]:
    return {turns: with_thinking(synthesize("coding", turns=turns, seed=0)) for turns in (SMALL, BIG)}


def reads_of(trace: Trace, spec: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Reads, Any]:
    monkeypatch.setattr(engine, "History", CountingHistory)
    policy = resolve([spec])[0].policy
    reads = Reads()
    for stage in getattr(policy, "stages", None) or (policy,):
        _instrument(stage, reads)
    replayer = engine.Replayer(trace, MessageSizer(TokenCounter(get_tokenizer("chars4"))), engine.Setup())
    run = replayer.run(policy)
    return reads, run


def test_every_registered_policy_has_a_spec_here():
    missing = sorted(set(policies()) - set(SPECS))
    assert not missing, f"add a spec for {missing} to SPECS so its cost per request is checked"


def test_the_counting_history_sees_a_whole_history_walk(traces, monkeypatch):
    """The instrument itself: a policy that walks the history every request is caught."""

    class Walker:
        name, params = "walker", NoParams()

        def decide(self, ctx: Any) -> tuple:
            sum(1 for _ in ctx.history.items)
            return ()

    small, _ = reads_of(traces[SMALL], "none", monkeypatch)
    assert small.total == 0
    monkeypatch.setattr(engine, "History", CountingHistory)
    counts = {}
    for turns in (SMALL, BIG):
        reads = Reads()
        walker = Walker()
        _instrument(walker, reads)
        engine.Replayer(traces[turns], MessageSizer(TokenCounter(get_tokenizer("chars4"))),
                        engine.Setup()).run(walker)  # type: ignore[arg-type]
        counts[turns] = reads
    assert counts[BIG].most > 3 * counts[SMALL].most
    assert counts[BIG].total > 12 * counts[SMALL].total


@pytest.mark.parametrize("spec", [s for specs in SPECS.values() for s in specs])
def test_reads_per_request_do_not_grow_with_the_trace(spec, traces, monkeypatch):
    small, run_small = reads_of(traces[SMALL], spec, monkeypatch)
    big, _run_big = reads_of(traces[BIG], spec, monkeypatch)
    if spec != "none":
        acted = [e for e in run_small.events if e.kind not in ("threshold", "overflow")]
        assert acted, f"{spec} never acts on the {SMALL}-turn trace: the check would be empty"
    # Linear per request would be ~4x on the largest request; bounded stays about the same.
    assert big.most <= 2 * max(small.most, 50), (spec, small.most, big.most)
    # Over the run: linear is ~4x (4x the requests; more when the policy acts more often on the longer
    # trace), quadratic ~16x.
    assert big.total <= 8 * max(small.total, 1000), (spec, small.total, big.total)


def test_scored_keeps_what_its_history_bounds_not_what_the_session_evicted(traces):
    """Between requests scored keeps its units in tier lists; the units it evicted leave them (a dead
    front is let go once it outgrows the rest), so what it keeps is bounded by the live history, not by
    all the session ever evicted. On this trace it keeps about one unit per live message; when the
    evicted front stayed, it kept 2.9 per live message at 1,200 turns, and more the longer the session."""
    policy = resolve(["scored:budget=100000"])[0].policy
    replayer = engine.Replayer(traces[BIG], MessageSizer(TokenCounter(get_tokenizer("chars4"))), engine.Setup())
    run = replayer.run(policy)
    evicted = sum(e.messages for e in run.events if e.kind == "evict")
    kept = sum(len(units) for units in policy._lists.values())
    live = len(policy._history)
    assert evicted > 5 * live  # the session evicted far more than the history ever holds
    assert kept <= 2 * live


# ---------------------------------------------------------------- text a policy counts and reads

@dataclass
class TextTally:
    on: bool = False
    chars: int = 0


TEXT = TextTally()


class CountingCounter(TokenCounter):
    """A token counter that adds up the characters it is asked about while TEXT.on is set: each costs a
    hash of the text for the memo at least, and a count when the text is new."""

    def count(self, text: str) -> int:
        if TEXT.on:
            TEXT.chars += len(text)
        return super().count(text)


def text_of(trace: Trace, spec: str, monkeypatch: pytest.MonkeyPatch) -> Reads:
    """Per request, the characters a policy has counted and the summarizer has scanned for marker lines."""
    import ctxsim.summarizers.extractive as extractive

    scan = extractive._markers

    def markers(text: str, stop_at_notes: bool) -> Any:
        if TEXT.on:
            TEXT.chars += len(text)
        return scan(text, stop_at_notes)

    monkeypatch.setattr(extractive, "_markers", markers)
    policy = resolve([spec])[0].policy
    reads = Reads()
    for stage in getattr(policy, "stages", None) or (policy,):
        inner = stage.decide

        def counted(ctx: Any, _inner: Any = inner) -> Any:
            before = TEXT.chars
            TEXT.on = True
            try:
                return _inner(ctx)
            finally:
                TEXT.on = False
                reads.add(ctx.request, TEXT.chars - before)

        stage.decide = counted
    engine.Replayer(trace, MessageSizer(CountingCounter(get_tokenizer("chars4"))), engine.Setup()).run(policy)
    return reads


# A compaction's summary keeps every USER and DECISION line (seed 000's semantics), so it grows through the
# session; with a low trigger it soon holds more than the trigger and the policy compacts at every request.
# Counted or scanned whole each time, that is O(session) per request: 186 s on a 49 MB trace.
LONG_SESSION_SPECS = ["compact:trigger=6000,compact_above=4000,clear_at_least=2000,keep_recent=6",
                      "ctxkit:trigger=6000,compact_above=4000,clear_at_least=2000"]


@pytest.mark.parametrize("spec", LONG_SESSION_SPECS)
def test_compact_counts_and_scans_only_new_text_when_its_summary_grows(spec, traces, monkeypatch):
    """Each compaction counts and scans about as much text on the long trace as on the short one (linear:
    the same per compaction; it compacts more often on the long one, at most requests). Before the summary
    was taken over piece by piece, the largest request here counted 16x as much at 4x the turns."""
    small = text_of(traces[SMALL], spec, monkeypatch)
    big = text_of(traces[BIG], spec, monkeypatch)
    acted = {name: sum(1 for n in reads.per_request.values() if n) for name, reads in (("small", small), ("big", big))}
    assert acted["big"] > BIG / 3, acted  # the regime in question: it compacts at a third of the requests or more
    assert big.most <= 2 * max(small.most, 1000), (spec, small.most, big.most)
    per_small, per_big = small.total / acted["small"], big.total / acted["big"]
    assert per_big <= 2 * per_small, (spec, per_small, per_big)
