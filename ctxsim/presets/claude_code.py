"""`claude-code`: Claude Code's automatic context management.

Source: reference/providers-and-products.md B.5. Auto-compaction fires at the effective window
(window minus a 20k output reserve) minus a 13k buffer: 167,000 tokens of a 200k window (83.5%),
i.e. 33,000 tokens of headroom. Claude Code "clears older tool outputs first, then summarizes the
conversation if needed": old tool results are cleared (newest 3 kept) when the prompt reaches the
same threshold, and the conversation is compacted only if it is still past it. Full compaction
replaces the whole message history with one summary written by the model (simulated size).

Not modelled: the files, skills and CLAUDE.md Claude Code re-injects after compaction, the
time-based microcompact, and the cache read of the summarising request (ctxsim meters it
uncached).
"""

from ctxsim.presets import Preset, register

register(Preset(
    name="claude-code",
    summary="Claude Code: clear old tool output, then auto-compact at window - 33k (167k of 200k)",
    source="Claude Code auto-compact threshold and docs (reference B.5)",
    stages=(
        "clear:trigger=167000,keep=3",
        "compact:headroom_tokens=33000,keep_recent=0,clear_at_least=0,summarizer=llm",
    ),
    notes=("the clearing threshold is fixed at 167,000 tokens (a 200k window); compaction follows the window",),
    module=__name__,
))
