"""`anthropic-api`: the Anthropic Messages API's server-side context management with its defaults.

Source: reference/providers-and-products.md B.1 (context editing, `clear_tool_uses_20250919`:
trigger 100,000 input tokens, keep 3 tool uses) and B.2 (server compaction, `compact_20260112`:
trigger 150,000 input tokens). Clearing runs first; compaction fires only if the prompt is still
past its trigger. Cache, provider and model are the trace's.
"""

from ctxsim.presets import Preset, register

register(Preset(
    name="anthropic-api",
    summary="Anthropic API: clear_tool_uses at 100k keeping 3, then server compaction at 150k",
    source="Anthropic context editing clear_tool_uses_20250919 and compaction compact_20260112 (reference B.1, B.2)",
    stages=("clear:trigger=100000,keep=3", "server_compact:trigger=150000"),
    notes=("clear_thinking_20251015 is not included; add clear_thinking before clear for thinking models",),
    module=__name__,
))
