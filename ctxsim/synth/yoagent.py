"""yoagent's deterministic replay workload (its tests/context_cache_test.rs, section 3.1 of
the reference notes), as a canonical trace.

Every tool result holds the full output the tool produced: read_file is already capped at
`read_cap` lines, the way yoagent's read tool pages; the 200-line truncation yoagent applies
when it appends a result is a context policy and is left to the simulator. The workload has no
timestamps, and yoagent renders neither the system prompt nor the tools, so the session has none.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from ctxsim.errors import ParameterError
from ctxsim.model import Message, Session, ToolCall, Trace

PROFILE = "yoagent"
READ_CAP = 500  # yoagent's DEFAULT_READ_MAX_LINES; None gives the 0.14.2 baseline (unbounded)
DEFAULTS: dict[str, Any] = {"read_cap": READ_CAP}

TASK = "Refactor the provider layer."
WINDOW = 128_000


def check(options: dict[str, Any]) -> dict[str, Any]:
    merged = {**DEFAULTS, **options}
    cap = merged["read_cap"]
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise ParameterError(
            f"synth profile {PROFILE!r}: option read_cap must be a positive integer or None, got {cap!r}"
        )
    return merged


def tool(turn: int) -> str:
    """The tool turn N calls (yoagent's measured mix: bash 41%, edit 36%, read 19%, search 4%)."""
    slot = turn % 100
    if slot <= 40:
        return "bash"
    if slot <= 76:
        return "edit_file"
    if slot <= 95:
        return "read_file"
    return "search"


def line_count(turn: int, read_cap: int | None = READ_CAP) -> int:
    """How many lines turn N's tool prints."""
    name = tool(turn)
    if name == "bash":
        return 40 + (turn * 37) % 700
    if name == "read_file":
        lines = 100 + (turn * 53) % 1400
        return lines if read_cap is None else min(lines, read_cap)
    if name == "search":
        return 10 + (turn * 17) % 120
    return 1 + (turn * 3) % 4


def output(turn: int, read_cap: int | None = READ_CAP) -> str:
    """Turn N's tool output: numbered lines joined by newlines, no trailing newline."""
    name = tool(turn)
    tail = "data " * 6
    return "\n".join(f"turn {turn} {name} line {i}: {tail}" for i in range(line_count(turn, read_cap)))


def generate(turns: int, seed: int = 0, *, read_cap: int | None = READ_CAP) -> Trace:
    """The workload for turns 1..`turns`; `seed` is accepted and ignored (the workload is fixed)."""
    messages: list[Message] = [Message(role="user", content=TASK)]
    for n in range(1, turns + 1):
        if n % 5 == 0:
            messages.append(Message(role="user", content=f"Also check item {n} while you are there."))
        name = tool(n)
        call_id = f"tc-{n}"
        messages.append(
            Message(
                role="assistant",
                content=f"Turn {n}: inspecting the workspace before the next edit.",
                tool_calls=(ToolCall(id=call_id, name=name, arguments={"arg": f"target-{n}"}),),
            )
        )
        messages.append(
            Message(role="tool", content=output(n, read_cap), tool_call_id=call_id, name=name, is_error=False)
        )
    session = Session(
        id=f"yoagent-t{turns}",
        source="yoagent-replay",
        model="claude-sonnet-4-5",
        provider="anthropic",
        window=WINDOW,
        messages=tuple(messages),
        extra=MappingProxyType({"generator": {"profile": PROFILE, "turns": turns, "read_cap": read_cap}}),
    )
    return Trace(name=session.id, sessions=(session,))
