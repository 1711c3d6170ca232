"""`codex`: Codex CLI's auto-compaction.

Source: reference/providers-and-products.md B.4. Codex compacts at 90% of the model's context
window; the rebuilt history is the model's handoff summary plus the newest user messages kept
verbatim up to 20,000 tokens. Not modelled: remote compaction through `/responses/compact` (the
summarising request is metered like any other) and dropping the oldest item when the compaction
request itself overflows.
"""

from ctxsim.presets import Preset, register

register(Preset(
    name="codex",
    summary="Codex CLI: compact at 90% of the window, keeping recent user messages (20k tokens)",
    source="openai/codex auto-compaction (reference B.4)",
    stages=("compact:compact_at=0.9,keep_recent=0,keep_user_tokens=20000,clear_at_least=0,summarizer=llm",),
    module=__name__,
))
