"""`gemini-cli`: Gemini CLI's chat compression.

Source: reference/providers-and-products.md B.6 (chatCompressionService): compress when the prompt
reaches 50% of the model's token limit, keep the newest 30% of the history verbatim, and summarise
the rest into a state snapshot with a second, verifying model call. Not modelled: the split point's
alignment to a user message (here the cut only avoids separating tool results from their calls)
and the truncation of large old tool outputs to 50,000 tokens.
"""

from ctxsim.presets import Preset, register

register(Preset(
    name="gemini-cli",
    summary="Gemini CLI: compress at 50% of the window, keep the newest 30%, two summarising calls",
    source="google-gemini/gemini-cli chatCompressionService (reference B.6)",
    stages=("compact:compact_at=0.5,keep_fraction=0.3,clear_at_least=0,summarizer=llm,verify=true",),
    module=__name__,
))
