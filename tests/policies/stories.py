"""Small sessions to tell a policy's behaviour by, and a probe that writes down each request's context.

A story: one user message `u`, then turns n = 1, 2, ...: an assistant message `a<n>` that calls a
tool (call id `c<n>`) and the tool's result `r<n>`, then a last assistant message. Request k is the
k-th assistant message, so before any policy acts the context of request k is `u a1 r1 .. a<k-1> r<k-1>`.
The probe labels each item: `u` (or `u<n>` for a user message after turn n), `a3`, `r3`, `r3~` (a
stub: `cleared`), `r3!` (pinned), `S` (a summary or marker a policy wrote); an assistant message
without calls by its text (`ok`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import policy_story
from helpers import T0, replay, session_of

from ctxsim.model import Message, ToolCall, Trace, format_ts
from ctxsim.policies import Stages, parse_policy
from ctxsim.policies.base import Item, View
from ctxsim.replay.engine import PolicyRun


def story(turns: int, output: Callable[[int], str] = lambda n: "x" * 400, tool: Callable[[int], str] = lambda n: "bash",
          text: Callable[[int], str] = lambda n: f"step {n}", users: Mapping[int, str] | None = None) -> Trace:
    """`turns` turns; r<n> is `output(n)` (400 characters: about 100 chars4 tokens) from tool `tool(n)`;
    `users[n]`: a user message after turn n."""
    messages = [Message("user", "fix the failing test", ts=format_ts(T0))]
    for n in range(1, turns + 1):
        call = ToolCall(f"c{n}", tool(n), {"path": f"f{n}.py"})
        messages.append(Message("assistant", text(n), ts=format_ts(T0 + 10 * n), tool_calls=(call,)))
        messages.append(Message("tool", output(n), ts=format_ts(T0 + 10 * n + 1), tool_call_id=f"c{n}",
                                name=tool(n)))
        if users and n in users:
            messages.append(Message("user", users[n], ts=format_ts(T0 + 10 * n + 2), extra={"after": n}))
    return session_of(messages)


def label(item: Item) -> str:
    m = item.message
    if item.inserted:
        return "S"
    if m.role == "user":
        return f"u{m.extra['after']}" if "after" in m.extra else "u"
    if m.role == "assistant":
        return "a" + m.tool_calls[0].id[1:] if m.tool_calls else m.content[:8]  # "ok": a filler
    mark = "~" if item.cleared else "!" if item.pinned else ""
    return f"r{(m.tool_call_id or '?')[1:]}{mark}"


class Probe(policy_story.Probe):
    """policy_story's probe (a last stage that edits nothing), writing items with this module's `label`."""

    def __init__(self) -> None:
        super().__init__(label)


class Spy:
    """Stands in for a policy and keeps, per request, what it saw (labels) and the edits it returned."""

    def __init__(self, policy: Any) -> None:
        self.policy, self.name, self.params = policy, policy.name, policy.params
        self.seen: dict[int, list[str]] = {}
        self.edits: dict[int, Sequence[Any]] = {}
        if hasattr(policy, "observe"):
            self.observe = policy.observe
        if hasattr(policy, "start"):
            self.start = policy.start

    def decide(self, view: View) -> Sequence[Any]:
        self.seen[view.request] = [label(item) for item in view.items]
        edits = self.edits[view.request] = self.policy.decide(view)
        return edits


def labels(items: Sequence[Item]) -> list[str]:
    return [label(item) for item in items]


def told(trace: Trace, spec: str, **setup: Any) -> tuple[PolicyRun, Probe]:
    """Replay `trace` under `spec` with a probe after it (chars4 tokens)."""
    run, probe, _ = spied(trace, spec, **setup)
    return run, probe


def spied(trace: Trace, spec: str, **setup: Any) -> tuple[PolicyRun, Probe, Spy]:
    """`told`, with the (last) policy stage behind a Spy."""
    probe = Probe()
    policy = parse_policy(spec)
    stages = list(getattr(policy, "stages", None) or (policy,))
    spy = Spy(stages[-1])
    return replay(trace, Stages(spec, (*stages[:-1], spy, probe)), **setup), probe, spy


def acted(run: PolicyRun) -> list[tuple[int, str, int]]:
    """(request, kind, messages) of each event a policy logged (the window crossings left out)."""
    return [(e.request, e.kind, e.messages) for e in run.events if e.kind not in ("threshold", "overflow")]


def told_with(reference: Any, spec: str, trace: Trace, **setup: Any) -> tuple[PolicyRun, Probe]:
    """`told`, with the policy replaced by `reference` built from the spec's params (a module's REFERENCE)."""
    probe = Probe()
    return replay(trace, Stages(spec, (reference(parse_policy(spec).params), probe)), **setup), probe
