"""The `openhands` preset: OpenHands' default condenser, amortized forgetting.

Source: OpenHands V0 `openhands/core/config/condenser_config.py` and
`memory/condenser/impl/amortized_forgetting_condenser.py` (reference/providers-and-products.md
B.8): `max_size=100` events, `keep_first=1`. ctxsim counts messages where OpenHands
counts events (an action and its observation are two events, as a call and its
result are two messages). The LLM-summarising condenser makes the same cut and
adds a summary; this preset models the summary-free variant. Tokenizer, cache and
window are left to the trace (OpenHands runs on many providers).
"""

from __future__ import annotations

from ctxsim.presets import Preset, register

PRESET = Preset(
    name="openhands",
    summary="OpenHands condenser defaults: past 100 messages keep the first and the newest half",
    source="OpenHands AmortizedForgettingCondenser (max_size=100, keep_first=1)",
    stages=("amortized:max_size=100,keep_first=1",),
    notes=(
        "events are counted as messages: one tool call and one tool result per action/observation pair",
        "no summary is written; the llm condenser would summarise the forgotten span at one extra request",
    ),
    module=__name__,
)
register(PRESET)
