"""`mask`: observation masking, JetBrains' "Complexity Trap" baseline.

Source: Lindenbauer et al., "The Complexity Trap" (arXiv 2508.21433;
reference/providers-and-products.md D.1): the tool outputs of the newest M = 10
turns stay verbatim and every older one is replaced by a short placeholder; the
agent's own messages and the calls are kept. The paper ran it in SWE-agent, whose
history processor writes "Old environment output" placeholders; OpenHands'
`ObservationMaskingCondenser` is the same idea counted in events (B.8).

A turn is an assistant message that calls tools. The window slides every turn, so
each request masks one more output and the cached prefix breaks at it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ctxsim.history import Edit, Splice
from ctxsim.params import field_doc
from ctxsim.policies import Context, PolicyInfo, register
from ctxsim.policies.truncate import split_lines

DEFAULT_PLACEHOLDER = "Old environment output: ({lines} lines omitted)"


@dataclass(frozen=True)
class MaskParams:
    keep: int = field(default=10, metadata=field_doc(
        "newest tool-calling turns whose outputs stay verbatim (the paper's M = 10)"))
    placeholder: str = field(default=DEFAULT_PLACEHOLDER, metadata=field_doc(
        "text that replaces an older output; fields {lines} {tokens} {tool}"))
    exclude_tools: tuple[str, ...] = field(default=(), metadata=field_doc("tools whose outputs are never masked"))

    def __post_init__(self) -> None:
        if self.keep < 0:
            raise ValueError("keep must not be negative")
        try:
            self.placeholder.format(lines=0, tokens=0, tool="")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"placeholder may use only {{lines}} {{tokens}} {{tool}}: {exc}") from None


class MaskPolicy:
    name = "mask"

    def __init__(self, params: MaskParams) -> None:
        self.params = params

    def decide(self, ctx: Context) -> Sequence[Edit]:
        p = self.params
        history = ctx.history
        turns = [item for item in history.items if item.message.role == "assistant" and item.message.tool_calls]
        if len(turns) <= p.keep:
            return ()
        old = turns[: len(turns) - p.keep]
        stale = set()
        for holder in old:
            for call in holder.message.tool_calls:
                result = history.result_of(call.id)
                if result is not None and result.alive:
                    stale.add(id(result))
        splices = []
        for i, item in enumerate(history.items):
            if id(item) not in stale or item.cleared or item.pinned:
                continue
            m = item.message
            if m.name in p.exclude_tools:
                continue
            text = p.placeholder.format(lines=len(split_lines(m.content)), tokens=item.tokens, tool=m.name or "tool")
            if text == m.content:
                continue
            splices.append(Splice(i, i + 1, (history.item(replace(m, content=text), origin=item.origin,
                                                          cleared=True),)))
        if not splices:
            return ()
        return (Edit("mask", tuple(splices), f"masked {len(splices)} tool outputs older than {p.keep} turns"),)


register(PolicyInfo(
    "mask", MaskParams, MaskPolicy,
    "JetBrains 'The Complexity Trap' observation masking (M=10); SWE-agent LastNObservations",
    "replace tool outputs older than the newest M turns with a placeholder", __name__))
