"""Small sessions, and a probe that writes down each request's context, for the policy stories in tests/policies.

A story session: one user message `u`, then turns n = 1, 2, ...: an assistant message `a<n>` that
calls a tool (call id `c<n>`) and the tool's result `r<n>`, and a last assistant message. Request k
is the k-th assistant message, so the context of request k is `u a1 r1 ... a<k-1> r<k-1>`. The probe
labels each item of a context: `u`, `a3`, `r3`, `r3~` (a stub or placeholder: `cleared`), `r3!`
(pinned), `S` (a summary or marker a policy wrote).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from helpers import T0, replay, session_of

from ctxsim.model import Message, ToolCall, Trace, format_ts
from ctxsim.policies import NoParams, Policy, parse_policy
from ctxsim.policies.base import Item, View
from ctxsim.replay.engine import PolicyRun


def story(turns: int, output: Callable[[int], str] = lambda n: "x" * 4000, tool: str | Callable[[int], str] = "bash",
          thinking: bool = False, extra: dict[int, Sequence[Message]] | None = None) -> Trace:
    """`turns` turns; `output(n)` is r<n>'s text (4,000 characters: about 1,000 chars4 tokens)."""
    messages = [Message("user", "fix the failing test", ts=format_ts(T0))]
    for n in range(1, turns + 1):
        name = tool(n) if callable(tool) else tool
        call = ToolCall(f"c{n}", name, {"path": f"f{n}.py"})
        messages.append(Message("assistant", f"step {n}", ts=format_ts(T0 + 10 * n), tool_calls=(call,),
                                thinking=f"thinking about step {n}" if thinking else None))
        messages.append(Message("tool", output(n), ts=format_ts(T0 + 10 * n + 1), tool_call_id=f"c{n}", name=name))
        messages.extend((extra or {}).get(n, ()))
    return session_of(messages)


def label(item: Item) -> str:
    m = item.message
    if item.inserted:
        return "S"
    if m.role == "user":
        return "u"
    if m.role == "assistant":
        return "a" + m.tool_calls[0].id[1:] if m.tool_calls else "end"
    mark = "~" if item.cleared else "!" if item.pinned else ""
    return f"r{(m.tool_call_id or '?')[1:]}{mark}"


class Probe:
    """A last stage that edits nothing: `seen[k]` is the context of request k, as labels; `items[k]` its items."""

    name = "probe"
    params = NoParams()

    def __init__(self, labeller: Callable[[Item], str] = label) -> None:
        self.labeller = labeller  # how an item is written in `seen` (tests/policies/stories.py has its own)
        self.seen: dict[int, list[str]] = {}
        self.items: dict[int, list[Item]] = {}
        self.shared: dict[str, Any] = {}  # what the stages of the (last) session share: `view.shared`

    def decide(self, view: View) -> tuple[()]:
        self.shared = view.shared
        self.items[view.request] = list(view.items)
        self.seen[view.request] = [self.labeller(item) for item in view.items]
        return ()


@dataclass(frozen=True)
class _Specs:
    stages: tuple[str, ...]


class _Staged:
    def __init__(self, stages: Sequence[Any], specs: Sequence[str]) -> None:
        self.name = "story"
        self.params = _Specs(tuple(specs))
        self.stages = tuple(stages)


def play(trace: Trace, spec: str | Policy, **setup: Any) -> tuple[PolicyRun, Probe]:
    """Replay `trace` under `spec` (`a+b` for stages in order) with a Probe last."""
    probe = Probe()
    stages = [parse_policy(s) for s in spec.split("+")] if isinstance(spec, str) else [spec]
    return replay(trace, _Staged([*stages, probe], [str(spec)]), **setup), probe  # type: ignore[arg-type]


def events(run: PolicyRun) -> list[tuple[int, str, str]]:
    """(request, kind, note) of what the policy did (the window's threshold events left out)."""
    return [(e.request, e.kind, e.note) for e in run.events if e.kind not in ("threshold", "overflow")]


def prompts(trace: Trace) -> list[int]:
    """The prompt of every request under `none` (index 0: request 1)."""
    return [r.input_tokens for r in replay(trace).rows]


def same_as_reference(module: Any, spec: str, trace: Trace) -> PolicyRun:
    """The policy of `spec` and its module's REFERENCE give the same events and rows; returns the run."""
    policy = parse_policy(spec)
    reference = module.REFERENCE(policy.params)
    fast, plain = replay(trace, policy), replay(trace, reference)
    assert fast.events == plain.events
    assert fast.rows == plain.rows
    return fast
