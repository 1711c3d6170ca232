"""`openai-responses`: OpenAI's server-side compaction on the Responses API, as a client typically sets it.

Source: reference/providers-2026-update.md (OpenAI, "Server-side compaction"):
`context_management: [{type: "compaction", compact_threshold: N}]` on `/responses` returns an
encrypted, opaque compaction item that replaces the history; "typical threshold in clients: 200,000"
(NousResearch/hermes-agent `DEFAULT_COMPACT_THRESHOLD = 200_000`); the compaction is billed like a
normal call, its cached prefix read (`iteration_cache=cached`). The compaction item's size is not
published (it is encrypted): the server_compact default (3,500 tokens) stands in for it.
"""

from ctxsim.presets import Preset, register

register(Preset(
    name="openai-responses",
    summary="OpenAI Responses API compaction at 200k input tokens, billed like a call (cached prefix read)",
    source="OpenAI compaction guide; hermes-agent DEFAULT_COMPACT_THRESHOLD (providers-2026-update.md)",
    stages=("server_compact:trigger=200000,iteration_cache=cached",),
    notes=("the compaction item is encrypted: its size is the server_compact default (summary_tokens=N sets it)",),
    module=__name__,
))
