"""The `oracle` bound: exactly what it keeps on hand-made traces, and a property test that no registered
policy has fewer recall misses at the same budget.

"The same budget": a policy is at budget B on a trace when every request's context (the prompt the
engine meters, fixed head included: Row.context_tokens) is at most B. The oracle at B must be at B
whenever B leaves room for the fixed head, and must then have no more misses (the loss meter's
count) than any registered policy that is at B, however its parameters are set.
"""

from __future__ import annotations

import contextlib
import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_loss import known_trace  # three reads, each result holding two identifiers only it has

from ctxsim.errors import CtxsimError, ParameterError
from ctxsim.loss import TraceIndex, metered_run
from ctxsim.loss.identifiers import extract, message_identifiers
from ctxsim.model import Message, Session, ToolCall, Trace
from ctxsim.policies import NoParams, make_policy, policies
from ctxsim.policies.oracle import NOTE_HEAD, Foresight, OracleParams, OraclePolicy, default_rules, rendered
from ctxsim.policies.spec import resolve
from ctxsim.replay.budgets import with_budget
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import MessageSizer

SIZER = MessageSizer(TokenCounter(get_tokenizer("chars4")))


class Last:
    """A stage after the policy: keeps each request's context (role, session index, text)."""

    name = "last"
    params = NoParams()

    def __init__(self) -> None:
        self.contexts: list[list[tuple[str, int, str]]] = []

    def decide(self, view):  # type: ignore[no-untyped-def]
        self.contexts.append([(i.message.role, i.origin, i.message.content) for i in view.items])
        return ()


def run_of(trace: Trace, policy, watch: Last | None = None):  # type: ignore[no-untyped-def]
    from ctxsim.policies import Stages

    replayer = Replayer(trace, SIZER, Setup())
    chosen = policy if watch is None else Stages(policy.name, (policy, watch))
    return metered_run(replayer, chosen, index=TraceIndex())


def oracle(budget: float | None, fold_to: float = 1.0) -> OraclePolicy:
    """Folding just enough (fold_to 1): the exact tests below; the default folds further."""
    return make_policy("oracle", {"budget": budget, "fold_to": fold_to})  # type: ignore[return-value]


def contexts(run) -> list[int]:  # type: ignore[no-untyped-def]
    return [r.context_tokens for r in run.rows if r.kind == "request"]


# ---------------------------------------------------------------- exactly what it keeps


def test_within_the_budget_it_does_nothing() -> None:
    base = run_of(known_trace(), make_policy("none"))
    run = run_of(known_trace(), oracle(max(contexts(base))))
    assert contexts(run) == contexts(base) and run.events == [] and run.loss.misses == []


def test_over_the_budget_it_folds_the_oldest_into_a_note_of_what_is_needed_later() -> None:
    watch = Last()
    run = run_of(known_trace(), oracle(300), watch)
    assert run.loss.misses == [] and max(contexts(run)) <= 300
    # request 4 is the first over 300: the task, alpha's call and its result are folded; of what they held
    # only alpha_value and ALPHA_MAX are needed later (request 4 itself); the task and the path are not.
    assert [(e.request, e.kind) for e in run.events] == [(4, "compact"), (5, "drop")]
    fourth = watch.contexts[3]
    assert fourth[0] == ("summary", -1, f"{NOTE_HEAD}\nALPHA_MAX\nalpha_value")
    assert [(role, origin) for role, origin, _ in fourth[1:]] == [("assistant", 3), ("tool", 4), ("assistant", 5),
                                                                  ("tool", 6)]
    # request 5: the note is needed no more (its identifiers were used at 4, and request 4's answer holds
    # them); it is dropped, beta's and gamma's reads stay
    assert [(role, origin) for role, origin, _ in watch.contexts[4]] == [
        ("assistant", 3), ("tool", 4), ("assistant", 5), ("tool", 6), ("assistant", 7), ("user", 8)]


def test_a_tight_budget_keeps_every_needed_identifier_in_notes_and_no_more() -> None:
    watch = Last()
    run = run_of(known_trace(), oracle(60), watch)
    assert run.loss.misses == [] and max(contexts(run)) <= 60
    notes = [ctx[0][2] for ctx in watch.contexts[1:]]
    assert notes[0] == f"{NOTE_HEAD}\nALPHA_MAX\nalpha_value"
    assert notes[1] == f"{NOTE_HEAD}\nALPHA_MAX\nBETA_CAP\nBETA_LIMIT\nalpha_value"
    assert notes[2] == f"{NOTE_HEAD}\nALPHA_MAX\nBETA_CAP\nBETA_LIMIT\nGAMMA_TOP\nalpha_value\ngamma_rate"
    # request 5 fits as it stands: nothing is reduced before it must be (alpha's identifiers, needed no
    # more, stay in the note)
    assert notes[3] == notes[2] and [e.request for e in run.events] == [2, 3, 4]


def test_folding_further_means_fewer_folds_and_never_a_miss_more() -> None:
    trace = known_trace()
    for budget in (60, 250, 300):
        tight, loose = run_of(trace, oracle(budget)), run_of(trace, oracle(budget, 0.5))
        assert len(loose.events) <= len(tight.events)
        assert loose.loss.misses == tight.loss.misses == []
        assert max(contexts(loose)) <= budget
    assert len(run_of(trace, oracle(300, 0.5)).events) < len(run_of(trace, oracle(300)).events)


def test_below_what_the_notes_need_it_keeps_the_most_misses_worth() -> None:
    """A budget that holds the fixed head and about one identifier: the knapsack keeps the ones worth most,
    and the misses are exactly those it had to leave out."""
    run = run_of(known_trace(), oracle(22))
    assert max(contexts(run)) <= 22
    floor = run_of(known_trace(), oracle(1))  # below the head: everything that may go goes, no note
    assert len(floor.loss.misses) == 6  # each of the six needed identifiers missed once
    assert len(run.loss.misses) < len(floor.loss.misses)


def test_tool_calls_and_results_leave_together() -> None:
    watch = Last()
    run_of(known_trace(), oracle(250), watch)
    for ctx in watch.contexts:
        roles = [(role, origin) for role, origin, _ in ctx]
        for role, origin in roles:
            if role == "tool":
                assert ("assistant", origin - 1) in roles  # its call (the message before it) is there


def test_pinned_messages_and_the_calls_of_pinned_results_stay() -> None:
    trace = known_trace()
    replayer = Replayer(trace, SIZER, Setup(pin_tools=("read_file",)))
    run = metered_run(replayer, oracle(60), index=TraceIndex())
    assert run.events == [] or all(e.kind in ("compact", "drop") for e in run.events)
    # with every read pinned the history can only lose the task and the answers: nothing needed is lost
    assert run.loss.misses == []


def test_the_budget_is_tokens_or_a_fraction_of_the_window() -> None:
    assert OracleParams(50_000).tokens(200_000) == 50_000
    assert OracleParams(0.25).tokens(200_000) == 50_000
    assert OracleParams().tokens(200_000) == 200_000
    assert make_policy("oracle", {"budget": "60%"}).params.tokens(100_000) == 60_000
    assert make_policy("oracle", {"budget": "50k"}).params.budget == 50_000
    for bad in ("0", "150%", "1.5"):
        with pytest.raises(ParameterError):
            make_policy("oracle", {"budget": bad})


def test_without_the_engines_hook_it_says_so() -> None:
    policy = oracle(10)

    class NoView:
        window = 100

    with pytest.raises(CtxsimError, match="needs the session's future"):
        policy.decide(NoView())  # type: ignore[arg-type]


def test_it_is_marked_the_bound() -> None:
    assert getattr(make_policy("oracle"), "bound", False) is True
    assert "bound" in policies()["oracle"].summary


def test_the_note_writes_every_identifier_so_the_rules_find_it_again() -> None:
    text = ("see \"hello world\" and compute(x) at src/a.py\nTypeError: bad thing\nINV-2041 #123 12,000 abc1234def "
            "http://x.com/a 'it is' `a.b` value_x fooBar 10.01 3f2a9bc1-0000-4000-8000-123456789abc")
    ids = extract(text)
    assert len(ids) > 12
    from ctxsim.policies.oracle import note_text

    back = set(message_identifiers(Message("summary", note_text(sorted(ids)))))
    assert set(ids) <= back
    assert rendered("compute") == "compute(" and rendered("hello world") == "`hello world`"


def test_foresight_worth_counts_the_needs_until_a_message_brings_it_back() -> None:
    trace = known_trace()
    holds, needs = default_rules()
    sight = Foresight.of(trace.sessions[0], holds, needs)
    assert sight.requests == [1, 3, 5, 7, 9]
    assert sight.next_need("alpha_value", 0) == 7 and sight.next_need("alpha_value", 8) is None
    assert sight.worth("alpha_value", 3) == 1  # needed at 7, which then holds it
    assert sight.worth("BETA_LIMIT", 3) == 0  # beta's read (session index 4) brings it before request 9 needs it
    assert sight.worth("BETA_LIMIT", 5) == 1 and sight.worth("BETA_LIMIT", 10) == 0


# ---------------------------------------------------------------- the property: no policy beats the bound


POOL = ["src/billing/tax.py", "compute_tax", "InvoiceBuilder", "ALPHA_MAX", "BETA_CAP", "ROUND_HALF_EVEN", "INV-2041",
        "parse_line", "max_retries", "https://example.org/api/v2", "GAMMA_TOP", "retryCount", "test_rounding",
        "AssertionError: expected 19.00"]


@st.composite
def sessions(draw: st.DrawFn) -> Trace:
    """One trace of one or two sessions (each session's future is its own)."""
    count = draw(st.integers(1, 2))
    parts = tuple(draw(one_session()).sessions[0] for _ in range(count))
    return Trace("t", tuple(dataclasses.replace(p, id=f"s{k}") for k, p in enumerate(parts)))


@st.composite
def one_session(draw: st.DrawFn) -> Trace:
    """A session of tool turns: results holding identifiers of POOL (and filler), answers using some of
    them; sometimes a user message, sometimes two calls in one turn, sometimes an answer in text only."""
    turns = draw(st.integers(3, 9))
    m: list[Message] = [Message("user", "Task: " + " ".join(draw(st.lists(st.sampled_from(POOL), max_size=2))))]
    n = 0
    for _ in range(turns):
        calls = draw(st.integers(0, 2))
        uses = draw(st.lists(st.sampled_from(POOL), max_size=3, unique=True))
        said = " and ".join(f"`{x}`" if " " in x else x for x in uses) or "ok"
        if calls == 0:
            m.append(Message("assistant", f"Now {said}."))
            if draw(st.booleans()):
                m.append(Message("user", "More: " + " ".join(draw(st.lists(st.sampled_from(POOL), max_size=2)))))
            continue
        ids = [f"c{n + k}" for k in range(calls)]
        n += calls
        m.append(Message("assistant", f"Looking at {said}.", tool_calls=tuple(
            ToolCall(c, "read_file", {"path": draw(st.sampled_from([*POOL[:1], "src/other.py", "README.md"]))})
            for c in ids)))
        for c in ids:
            held = draw(st.lists(st.sampled_from(POOL), max_size=4, unique=True))
            pad = " filler" * draw(st.integers(0, 120))
            body = "\n".join(f"`{x}`" if " " in x and not x.startswith("Assertion") else x for x in held)
            m.append(Message("tool", body + pad, tool_call_id=c, name="read_file"))
    final = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=4, unique=True))
    m.append(Message("assistant", "Done: " + " ".join(f"`{x}`" if " " in x else x for x in final)))
    return Trace("t", (Session(id="s", system="You are a coding agent.", messages=tuple(m)),))


def rivals(budget: int) -> list[tuple[str, object]]:
    """Every registered policy (but the oracle) at its defaults and at this budget where it takes one,
    and the settings of the eviction families that keep least."""
    out: list[tuple[str, object]] = []
    specs = [name for name in policies() if name != "oracle"]
    specs += ["clear:keep=0", "clear:keep=1,clear_tool_inputs=true", "mask:keep=1", "mask:keep=3",
              "recent:keep_first=0,keep_last=1", "recent:keep_first=0,keep_last=2", "recent:keep_first=1,keep_last=4",
              "recent:keep_first=0,keep_last=6",
              "compact:keep_recent=2,clear_at_least=0", "compact:keep_recent=4,clear_at_least=0",
              "truncate:max_lines=1", "tiered:keep_recent=2,keep_first=0,system_prompt_tokens=0",
              "scored:recent_turns=1,filler_tokens=1"]
    for spec in specs:
        try:
            policy = resolve([spec])[0].policy
        except (CtxsimError, ParameterError):
            continue
        out.append((spec, policy))
        with contextlib.suppress(CtxsimError):
            out.append((f"{spec} @ {budget}", with_budget(policy, budget)))
    return out


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=sessions(), share=st.floats(0.02, 1.0))
def test_no_registered_policy_has_fewer_misses_at_the_same_budget(trace: Trace, share: float) -> None:
    peak = max(contexts(run_of(trace, make_policy("none"))))
    head = max(SIZER.system(s) + SIZER.tools(s) for s in trace.sessions)
    budget = max(head, int(peak * share))
    bound = run_of(trace, make_policy("oracle", {"budget": budget}))  # as registered: folds to 80%
    assert max(contexts(bound)) <= budget, "the oracle passed its budget"
    for spec, policy in rivals(budget):
        run = run_of(trace, dataclasses.replace(policy) if dataclasses.is_dataclass(policy) else policy)
        if max(contexts(run)) > budget:
            continue  # not at this budget
        assert len(bound.loss.misses) <= len(run.loss.misses), (
            f"{spec} at budget {budget}: {len(run.loss.misses)} misses, the oracle {len(bound.loss.misses)}")
