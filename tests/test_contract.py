"""Contract tests, parametrised from the policy registry: every registered policy is covered.

Each policy runs on a session that grows past small triggers, with a pinned tool (notes_read).
Checked: deterministic; never orphans a tool result (the engine refuses, and a watcher checks every
request's history); never edits a pinned message; no event before its own input-token trigger;
idempotent where its source says so (a second copy of the policy run right after it edits nothing).
"""

from __future__ import annotations

import dataclasses

import pytest
from helpers import T0, replay, session_of, turn_messages

from ctxsim.model import Message, format_ts
from ctxsim.policies import Context, NoParams, parse_policy, policies

# A spec per policy that makes it act on the contract session (about 1.5k tokens a turn, 40 turns,
# window 40,000). A newly registered policy without an entry runs with its defaults.
EXAMPLES = {
    "clear": "clear:trigger=8000,keep=3",
    "clear_thinking": "clear_thinking:keep=1",
    "compact": "compact:trigger=12000,compact_above=9000,keep_recent=6,clear_at_least=1000",
    "server_compact": "server_compact:trigger=50000",
    "pipeline": "pipeline:stages=[clear:trigger=8000|none]",
    "truncate": "truncate:max_lines=20",
    "mask": "mask:keep=3",
    "recent": "recent:keep_first=2,keep_last=8",
    "amortized": "amortized:max_size=30,keep_first=1",
    "idle_clear": "idle_clear:gap_minutes=0.25,keep=3,tools=[read_file|run_tests]",
    "notes": "notes:read_tools=[read_file]",
}
IDEMPOTENT = {"clear", "truncate", "mask", "clear_thinking", "recent"}
WINDOW = 40_000


def contract_trace():
    messages = [Message("user", "Fix the rounding bug. TODO: keep USD unchanged.", ts=format_ts(T0))]
    for i in range(1, 41):
        tool = "notes_read" if i % 10 == 1 else ("run_tests" if i % 3 else "read_file")
        output = "\n".join(f"line {j} of {tool} output for turn {i}" for j in range(160))
        if i % 7 == 0:
            output += "\nAssertionError: expected Decimal('10.01')"
        turn = turn_messages(i, tool, output, T0 + 30 * i, user="Also check the CSV export." if i == 20 else None)
        if i % 4 == 0:  # some thinking to clear
            turn = [dataclasses.replace(m, thinking=f"thinking about turn {i} " * 20) if m.role == "assistant"
                    else m for m in turn]
        messages += turn
    return session_of(messages, window=WINDOW)


NAMES = sorted(policies())


def spec_for(name: str) -> str:
    return EXAMPLES.get(name, name)


class Watcher:
    """Runs a policy and checks what each request's history looks like."""

    def __init__(self, policy):
        self.policy = policy
        self.name = policy.name
        self.params = policy.params
        self.pinned: dict[int, Message] = {}

    @property
    def stages(self):
        return (_Check(self), *(getattr(self.policy, "stages", None) or (self.policy,)))


class _Check:
    name = "contract-check"
    params = NoParams()

    def __init__(self, watcher: Watcher):
        self.watcher = watcher

    def decide(self, ctx: Context):
        calls: set[str] = set()
        present = set()
        for item in ctx.history.items:
            for call in item.message.tool_calls:
                calls.add(call.id)
            if item.message.role == "tool":
                assert item.message.tool_call_id in calls, f"orphaned tool result {item.message.tool_call_id}"
            if item.pinned:
                present.add(item.origin)
                known = self.watcher.pinned.setdefault(item.origin, item.message)
                assert known is item.message, "a pinned message was edited"
        assert set(self.watcher.pinned) <= present, "a pinned message was dropped"
        return ()


@pytest.mark.parametrize("name", NAMES)
def test_policy_contract(name):
    spec = spec_for(name)
    trace = contract_trace()
    first = replay(trace, spec, pin_tools=("notes_read",), window=WINDOW)
    again = replay(trace, spec, pin_tools=("notes_read",), window=WINDOW)
    assert first.rows == again.rows and first.events == again.events, "not deterministic"
    watcher = Watcher(parse_policy(spec))
    watched = replay(trace, watcher, pin_tools=("notes_read",), window=WINDOW)
    assert watched.rows == first.rows
    params = parse_policy(spec).params
    trigger = getattr(params, "trigger", None)
    if isinstance(trigger, int) and getattr(params, "trigger_type", "input_tokens") == "input_tokens":
        for event in first.events:
            if event.policy == name and event.kind not in ("threshold", "overflow"):
                assert event.tokens_before > trigger, f"{name} acted at {event.tokens_before} <= trigger {trigger}"


@pytest.mark.parametrize("name", sorted(IDEMPOTENT & set(NAMES)))
def test_idempotent_policies_edit_nothing_the_second_time(name):
    spec = spec_for(name)
    twice = replay(contract_trace(), f"{spec}+{spec}", pin_tools=("notes_read",), window=WINDOW)
    once = replay(contract_trace(), spec, pin_tools=("notes_read",), window=WINDOW)

    def acts(run):
        return [(e.request, e.kind, e.note) for e in run.events
                if e.policy == name and e.kind not in ("threshold", "overflow")]

    assert acts(twice) == acts(once)
    assert [r.input_tokens for r in twice.rows] == [r.input_tokens for r in once.rows]


def test_examples_act():
    """Each example spec must make its policy do something on the contract session."""
    for name in NAMES:
        if name in ("none", "pipeline"):
            continue
        run = replay(contract_trace(), spec_for(name), pin_tools=("notes_read",), window=WINDOW)
        assert run.events and any(e.kind not in ("threshold", "overflow") for e in run.events), \
            f"{name}: the contract session never made it act; add an example spec"
