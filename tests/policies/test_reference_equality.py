"""Every incremental policy makes the same edits as its plain reference, request by request.

A policy module may define `REFERENCE`: a plain, obviously correct version of its policy (it
recomputes from `view.items` at every request, keeping no state beyond what the semantics need),
built from the same params. The test finds every registered policy's `REFERENCE` (it does not list
them), replays random sessions under the policy and under its reference, alone and in pipelines
(each stage with a reference replaced by it), and requires the same events (request, stage, kind,
note, messages, tokens before and after) and the same per-request rows.

The sessions: a task, then up to 30 turns of zero to two tool calls (`notes_read` results pinned),
outputs from empty to 400 lines, user messages between turns, pauses past the cache's 5-minute and
1-hour lifetimes; sometimes a second session (each policy starts over). Each spec listed below is sized
to make its policy act on such sessions, and the test checks that it did (a policy found with a
REFERENCE but not listed is replayed with its defaults).
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from helpers import T0, replay
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxsim.model import Message, Session, ToolCall, Trace, format_ts
from ctxsim.policies import Stages, policies
from ctxsim.policies.spec import resolve

EXAMPLES = 12  # per spec: 12 sessions, two replays each

# Specs that make each policy act on the sessions below (a policy found with a REFERENCE but not named
# here is replayed with its defaults).
SPECS: dict[str, list[str]] = {
    "scored": ["scored:budget=700", "scored:budget=1500,relevance=jaccard,recent_turns=1",
               "scored:budget=900,relevance=constant,recent_turns=0,filler_tokens=40"],
    "tiered": ["tiered:max_context_tokens=2500,system_prompt_tokens=0,keep_recent=4,tool_output_max_lines=20",
               "tiered:max_context_tokens=1800,system_prompt_tokens=0,keep_recent=3,keep_first=3,compact_at=turn_end",
               "tiered:max_context_tokens=4000,count_prefix=true,compact_headroom_turns=0"],
    "zones": ["zones:window=2500", "zones:window=1800,memory_tools=[search],summary_max_share=0.05",
              "zones:window=2500,red_keep_turns=1,critical_keep_turns=0,yellow_fraction=0.5"],
    "recent": ["recent:keep_last=6", "recent:keep_first=3,keep_last=4"],
    "clear": ["clear:trigger=1500,keep=2,clear_at_least=100"],
    "clear_thinking": ["clear_thinking"],
    "mask": ["mask:keep=2"],
    "truncate": ["truncate:max_lines=20", "truncate:on_append=false,max_lines=20"],
    "hierarchical": ["hierarchical:checkpoint_every=2,epoch_every=2,era_every=2",
                     "hierarchical:checkpoint_every=3,epoch_every=0"],
    "compact": ["compact:trigger=2500"],
}
PIPELINES = ["mask:keep=2+scored:budget=900",
             "truncate:max_lines=20+tiered:max_context_tokens=2000,system_prompt_tokens=0",
             "clear:trigger=1500,keep=2,clear_at_least=100+compact:trigger=2500",
             "clear:trigger=1200,keep=1,clear_at_least=50+scored:budget=800",
             "mask:keep=1+zones:window=2200+recent:keep_last=12",
             "clear_thinking+mask:keep=2+scored:budget=900"]


def references() -> dict[str, Any]:
    """Every registered policy's REFERENCE, by name."""
    out = {}
    for name, info in sorted(policies().items()):
        reference = getattr(importlib.import_module(info.module), "REFERENCE", None)
        if reference is not None:
            out[name] = reference
    return out


def with_references(policy: Any) -> Any:
    """The policy with each stage that has a reference replaced by it, built from the same params."""
    stages = getattr(policy, "stages", None)
    if stages:
        return Stages(policy.name, tuple(with_references(s) for s in stages), policy.params)
    reference = references().get(policy.name)
    return reference(policy.params) if reference is not None else policy


def stage_names(spec: str) -> list[str]:
    policy = resolve([spec])[0].policy
    return [s.name for s in getattr(policy, "stages", None) or (policy,)]


def cases() -> list[str]:
    found = references()
    out = [spec for name in found for spec in SPECS.get(name, [name])]
    return out + [p for p in PIPELINES if set(stage_names(p)) & set(found)]


LISTED = {spec for specs in SPECS.values() for spec in specs} | set(PIPELINES)  # sized to act: checked


def lines(n: int, tag: str) -> str:
    return "\n".join(f"{tag} line {i}: " + "word " * (i % 7) for i in range(n))


@st.composite
def turns(draw: Any, sid: str, t: float) -> list[Message]:
    messages = [Message("user", "fix the parser " + "task " * draw(st.integers(1, 40)), ts=format_ts(t))]
    for n in range(1, draw(st.integers(3, 30)) + 1):
        t += draw(st.sampled_from([3.0, 20.0, 400.0, 4000.0]))  # pauses past the 5-minute and 1-hour TTLs
        if draw(st.integers(0, 4)) == 0:
            messages.append(Message("user", f"now module {n} " + "parser " * draw(st.integers(0, 30)),
                                    ts=format_ts(t)))
        tools = [draw(st.sampled_from(["bash", "search", "notes_read"])) for _ in range(draw(st.integers(0, 2)))]
        calls = tuple(ToolCall(f"{sid}c{n}-{j}", tool, {"n": n, "j": j}) for j, tool in enumerate(tools))
        filler = "ok" if not calls and draw(st.booleans()) else f"step {n} " + "parser " * draw(st.integers(0, 12))
        thinking = f"thinking about step {n} " * draw(st.integers(1, 20)) if draw(st.integers(0, 2)) == 0 else None
        messages.append(Message("assistant", filler, ts=format_ts(t + 1), tool_calls=calls, thinking=thinking))
        for call in calls:
            size = draw(st.integers(0, 400)) if draw(st.integers(0, 5)) == 0 else draw(st.integers(0, 40))
            messages.append(Message("tool", lines(size, call.name), ts=format_ts(t + 2), tool_call_id=call.id,
                                    name=call.name))
    messages.append(Message("assistant", "done", ts=format_ts(t + 3)))
    return messages


@st.composite
def traces(draw: Any) -> Trace:
    sessions = [Session(id="s1", system="You are a coding agent.", messages=tuple(draw(turns("a", T0))))]
    if draw(st.integers(0, 3)) == 0:  # a second session: every policy starts over
        sessions.append(Session(id="s2", system="You are a coding agent.",
                                messages=tuple(draw(turns("b", T0 + 90_000)))))
    return Trace("t", tuple(sessions))


def events(run: Any) -> list[tuple]:
    return [(e.request, e.policy, e.kind, e.note, e.messages, e.tokens_before, e.tokens_after) for e in run.events]


TRIED: dict[str, int] = {}  # examples tried, by spec (read by the last test)


def test_every_policy_of_mine_has_a_reference():
    assert {"scored", "tiered", "zones", "recent"} <= set(references())


@pytest.mark.parametrize("spec", cases())
def test_the_policy_makes_the_same_edits_as_its_reference(spec: str) -> None:
    acted: list[bool] = []
    names = set(stage_names(spec)) & set(references())

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(trace=traces())
    def check(trace: Trace) -> None:
        policy = resolve([spec])[0].policy
        reference = with_references(resolve([spec])[0].policy)
        assert [type(s) for s in getattr(reference, "stages", None) or (reference,)] != \
               [type(s) for s in getattr(policy, "stages", None) or (policy,)]  # a reference really stands in
        ours = replay(trace, policy, pin_tools=("notes_read",))
        plain = replay(trace, reference, pin_tools=("notes_read",))
        assert events(ours) == events(plain)
        assert ours.rows == plain.rows
        acted.append(any(e.policy in names for e in ours.events if e.kind not in ("threshold", "overflow")))
        TRIED[spec] = TRIED.get(spec, 0) + 1

    check()
    assert any(acted) or spec not in LISTED, f"{spec}: the policy never acted on these sessions; make the spec tighter"


@pytest.mark.parametrize("spec", ["zones:window=2500", "zones:window=1800,summary_max_share=0.05"])
def test_zones_counts_summaries_as_its_reference_with_a_real_tokenizer(spec: str) -> None:
    """With o200k_base zones counts a summary piece by piece; the reference counts it whole."""

    @settings(max_examples=6, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(trace=traces())
    def check(trace: Trace) -> None:
        policy = resolve([spec])[0].policy
        ours = replay(trace, policy, tokenizer="o200k_base")
        plain = replay(trace, with_references(policy), tokenizer="o200k_base")
        assert events(ours) == events(plain) and ours.rows == plain.rows
        TRIED[spec + " (o200k_base)"] = TRIED.get(spec + " (o200k_base)", 0) + 1

    check()


def test_examples_tried(capsys: pytest.CaptureFixture[str]) -> None:
    """How many sessions the tests above compared (printed with -s; all of them when the file runs whole)."""
    total = sum(TRIED.values())
    with capsys.disabled():
        print(f"\nreference equality: {total} sessions over {len(TRIED)} specs")
    assert all(n >= 1 for n in TRIED.values())
