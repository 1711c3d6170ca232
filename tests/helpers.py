"""Small builders for tests: sessions in the canonical model, replayed in memory."""

from __future__ import annotations

from ctxsim.counting import Framing, MessageSizer
from ctxsim.engine import PolicyRun, Replayer, Setup
from ctxsim.model import Message, Session, ToolCall, Trace, Usage, format_ts
from ctxsim.policies import Policy
from ctxsim.policyspec import resolve
from ctxsim.tokens import TokenCounter, get_tokenizer

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
    return Trace("t", (Session(id="s", system=system, messages=tuple(messages) + (final,), **kw),))


def replay(trace: Trace, policy: str | Policy = "none", tokenizer: str = "chars4", framing: Framing | None = None,
           **setup) -> PolicyRun:
    sizer = MessageSizer(TokenCounter(get_tokenizer(tokenizer)), framing)
    replayer = Replayer(trace, sizer, Setup(**setup))
    return replayer.run(resolve([policy])[0].policy if isinstance(policy, str) else policy)
