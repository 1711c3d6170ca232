"""`ctxkit`: seed 000's context manager, as its simulation ran.

Source: seed 000 (ctxkit): `Budget` defaults (trigger 30,000, clear_at_least 10,000, three newest
tool results kept, compact_above 20,000, keep_recent 10, notes_read pinned), `prepare()` running
`_clear_tool_results` and then `_compact` only if clearing was not enough, the
`ExtractiveSummarizer`, the 1,500-token `NotesFile`, and the simulation set-up: tiktoken
o200k_base, 4 tokens of framing per message, an append-only prefix cache that bills every
non-read token as a cache write with a 1,024-token minimum, Claude Sonnet 4.5 at $3 / $15 per
million tokens.

Framing: seed 000 sizes every message as `count_tokens(content) + 4` and the system prompt the
same way; this framing does exactly that (no tokens for a tool call's name or arguments, which
seed 000 keeps off the message, nor for tool schemas). Thinking, which seed 000's messages do not
have, is counted when a trace has it. Cleared results get seed 000's stub text (`stub=ctxkit`).
"""

from ctxsim.presets import Preset, register
from ctxsim.tokens.counting import Framing

STAGES = (
    "notes:max_tokens=1500",
    "clear:trigger=30000,keep=3,clear_at_least=10000,exclude_tools=[notes_read],stub=ctxkit",
    "compact:trigger=30000,compact_above=20000,keep_recent=10,clear_at_least=10000,summarizer=extractive",
)

FRAMING = Framing(message_tokens=4, tool_call_tokens=0, tool_result_tokens=0, count_tool_result_name=False,
                  count_call_name=False, count_call_arguments=False, tool_schema_tokens=0)

register(Preset(
    name="ctxkit",
    summary="seed 000's ctxkit: clear stale tool results past 30k, compact if still above 20k, bounded notes",
    source="seed 000 (ctxkit Budget, ContextManager.prepare, ExtractiveSummarizer, NotesFile, Meter)",
    stages=STAGES,
    tokenizer="o200k_base",
    framing=FRAMING,
    cache="prefix:writes=true,min_tokens=1024",
    provider="anthropic",
    model="claude-sonnet-4-5",
    pin_tools=("notes_read",),
    notes=(
        "the notes stage rebuilds the notes file from notes_write/notes_rewrite calls and appends it to summaries",
        "compact's trigger is checked on the prompt as it was before clearing, as seed 000 does",
        "tool-call names and arguments are not counted, as in seed 000; thinking is, when a trace has it",
    ),
    module=__name__,
))
