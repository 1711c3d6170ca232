"""Small builders for tests: sessions in the canonical model, replayed in memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ctxsim.model import Message, Session, ToolCall, Trace, Usage, format_ts
from ctxsim.policies import Context, NoParams, Policy, parse_policy
from ctxsim.policies.spec import resolve
from ctxsim.replay.engine import PolicyRun, Replayer, Setup
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import Framing, MessageSizer

T0 = 1_768_323_360.0  # 2026-01-13T16:56:00Z


def turn_messages(n: int, tool: str, output: str, ts: float, user: str | None = None,
                  usage: Usage | None = None) -> list[Message]:
    out = []
    if user:
        out.append(Message("user", user, ts=format_ts(ts)))
    call = ToolCall(f"c{n}", tool, {"path": f"src/f{n}.py"})
    out.append(Message("assistant", f"turn {n}: calling {tool}", ts=format_ts(ts + 1), tool_calls=(call,),
                       usage=usage))
    out.append(Message("tool", output, ts=format_ts(ts + 2), tool_call_id=f"c{n}", name=tool))
    return out


def session_of(messages: list[Message], system: str = "You are a coding agent.", **kw) -> Trace:
    final = Message("assistant", "done", ts=messages[-1].ts if messages else None)
    return Trace("t", (Session(id="s", system=system, messages=(*messages, final), **kw),))


def replay(trace: Trace, policy: str | Policy = "none", tokenizer: str = "chars4", framing: Framing | None = None,
           **setup) -> PolicyRun:
    sizer = MessageSizer(TokenCounter(get_tokenizer(tokenizer)), framing)
    replayer = Replayer(trace, sizer, Setup(**setup))
    return replayer.run(resolve([policy])[0].policy if isinstance(policy, str) else policy)


class Capture:
    """Runs after the policy's stages; keeps the last history and checks the invariants at every request."""

    name = "capture"
    params = NoParams()

    def __init__(self) -> None:
        self.history = None
        self.items: list = []
        self.pinned: dict[int, Message] = {}
        self.requests = 0

    def decide(self, ctx: Context):
        self.history = ctx.history
        self.items = list(ctx.history.items)  # the context of this request (the history grows after it)
        self.requests += 1
        calls: set[str] = set()
        for item in ctx.history.items:
            calls.update(c.id for c in item.message.tool_calls)
            if item.message.role == "tool":
                assert item.message.tool_call_id in calls, "a tool result lost its call"
            if item.pinned:
                assert self.pinned.setdefault(item.origin, item.message) is item.message, "a pinned message changed"
        alive = {i.origin for i in ctx.history.items if i.pinned}
        assert set(self.pinned) <= alive, "a pinned message was dropped"
        return ()


@dataclass(frozen=True)
class SpecList:
    stages: tuple[str, ...]


class SpecStages:
    """Policies built from specs, run in order by the engine (as `pipeline` is), plus a Capture stage last."""

    def __init__(self, name: str, specs: Sequence[str], capture: Capture | None = None) -> None:
        self.name = name
        self.params = SpecList(tuple(specs))
        self.stages = tuple(parse_policy(s) for s in specs) + ((capture,) if capture else ())
