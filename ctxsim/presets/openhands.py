"""The `openhands` presets: OpenHands' default condensers.

- `openhands`: the Software Agent SDK's `LLMSummarizingCondenser` (OpenHands V1; reference
  providers-and-products.md B.8, `openhands-sdk/.../llm_summarizing_condenser.py`): `max_size=240`
  events, `keep_first=2`; past them the head is kept, the tail is `max_size // 2 - keep_first - 1` and
  the forgotten middle (the previous summary in it) is summarised into one message by a separate LLM
  call; token-aware since SDK PR #1380 (reference providers-2026-update.md): with `max_tokens` unset the
  cap is the agent model's max input tokens (here the window), and it forgets enough to get under half.
  Condensation has been on by default since OpenHands PR #7746.
- `openhands-v0`: OpenHands V0's `AmortizedForgettingCondenser` (`condenser_config.py`, B.8):
  `max_size=100` events, `keep_first=1`, no summary.

ctxsim counts messages where OpenHands counts events (an action and its observation are two events, as
a call and its result are two messages). Tokenizer, cache and window are left to the trace (OpenHands
runs on many providers).
"""

from __future__ import annotations

from ctxsim.presets import Preset, register

PRESET = Preset(
    name="openhands",
    summary="OpenHands SDK condenser: past 240 messages or the window, keep the first 2, summarise down to half",
    source="OpenHands software-agent-sdk LLMSummarizingCondenser (max_size=240, keep_first=2, token cap; B.8)",
    stages=("amortized:max_size=240,keep_first=2,summarize=true,window_cap=true",),
    notes=(
        "events are counted as messages: one tool call and one tool result per action/observation pair",
        "the summary's size is modelled (5% of the forgotten span, 500 to 2,000 tokens): summary_tokens=N sets it",
        "OpenHands V0's summary-free amortized forgetting (100 events, keep 1): openhands-v0",
    ),
    module=__name__,
)
register(PRESET)

V0 = Preset(
    name="openhands-v0",
    summary="OpenHands V0 condenser defaults: past 100 messages keep the first and the newest half",
    source="OpenHands AmortizedForgettingCondenser (max_size=100, keep_first=1)",
    stages=("amortized:max_size=100,keep_first=1",),
    notes=(
        "events are counted as messages: one tool call and one tool result per action/observation pair",
        "no summary is written; the llm condenser would summarise the forgotten span at one extra request",
    ),
    module=__name__,
)
register(V0)
