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

How a recorded tool call maps to seed 000's messages (other mappings give other sizes, and so
other event timings: tests/test_ctxkit_reference.py checks this one over 600 turns):

- Seed 000's tool result carries `tool` and an `args` string, which its stub prints:
  `[cleared: {tool}({args}) returned ...]`. The preset's stub takes `args` from the call the result
  answers (`clear.short_args`): arguments that are a string are that string; a dict of exactly one
  string value is that value (`{"path": "src/tax.py"}` -> `src/tax.py`); anything else is the call's
  compact JSON, key order kept (`{"path":"src/tax.py","old":"x"}`); in every case at most 200
  characters (seed 000 prints its `args` whole: a longer one gives a longer stub there). A notes
  write recorded as seed 000's `"section | entry"` string reads as that section and entry.
- Seed 000 counts an assistant message as `count(content) + 4`: the call's name and arguments are
  kept off the message and never counted. The preset's framing counts the message's text (and
  thinking, which seed 000 has none of) plus 4, and nothing for its tool calls. A converter that
  put the call into the assistant text, or counted its JSON, would make every turn larger than
  seed 000's and move each clearing and compaction earlier.
- Seed 000's summaries end with `read_notes()`; the preset's end with the notes the notes stage
  rebuilt, rendered as NotesFile renders them, without the final newline NotesFile.save adds to
  the file (a seed run that wires `read_notes=notes.read` gets that newline in its summaries).
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
