"""`claude-code`: Claude Code's automatic context management, with its threshold as measured.

Claude Code "clears older tool outputs first, then summarizes the conversation if needed" (its docs,
reference/providers-and-products.md B.5): old tool results are cleared (newest 3 kept) once the
prompt passes the auto-compact threshold, and the conversation is compacted only if it is still
past it. Full compaction replaces the whole message history with one summary written by the model
(simulated size).

The threshold, by version (`THRESHOLDS`, newest last; `for_version` picks one):

- through 2.1.5 (measured): recorded auto-compactions fired at `compact_boundary` preTokens
  155,548 (2.0.76) and 155,554 (2.1.5), 200k window: window minus a 32,000-token output reserve
  minus the 13,000-token buffer, 155,000 tokens (77.5%), i.e. 45,000 of headroom. This is the
  default preset.
- the decompiled v2.1.221 (reference B.5, anthropics/claude-code #31806, #23409: "Autocompact
  buffer: 33k"): the reserve is at most 20,000, so window - 33,000 = 167,000 of 200k. Not seen
  in a transcript; `claude-code:trigger=167000,headroom_tokens=33000` replays it.

`ctxsim validate` replays a trace that recorded one of these compactions as if it had not
compacted, under the preset for its version, and says where the preset compacts beside where the
product did (ctxsim.analysis.preset_check).

Not modelled: the files, skills and CLAUDE.md Claude Code re-injects after compaction, the
time-based microcompact, and the cache read of the summarising request (ctxsim meters it
uncached).
"""

from ctxsim.presets import Preset, register, version_key

WINDOW = 200_000  # the window the measured thresholds were seen at
# (first version, headroom below the window, source): newest last
THRESHOLDS: tuple[tuple[str, int, str], ...] = (
    ("0", 45_000, ("measured: auto compact_boundary at preTokens 155,548 (2.0.76) and 155,554 (2.1.5) of a 200k "
                   "window: window - 32k output reserve - 13k buffer = 155,000")),
    ("2.1.221", 33_000, ("decompiled v2.1.221 (reference B.5; claude-code #31806, #23409): window - 20k reserve - "
                         "13k buffer = 167,000 of 200k; not measured in a transcript")),
)
HEADROOM = THRESHOLDS[0][1]


def for_version(version: str | None) -> tuple[str, int, str]:
    """(policy spec, headroom tokens, source) of the preset as the given Claude Code version behaves."""
    chosen = THRESHOLDS[0]
    for entry in THRESHOLDS:
        if version_key(version) >= version_key(entry[0]):
            chosen = entry
    headroom = chosen[1]
    spec = "claude-code" if headroom == HEADROOM else \
        f"claude-code:trigger={WINDOW - headroom},headroom_tokens={headroom}"
    return spec, headroom, chosen[2]


register(Preset(
    name="claude-code",
    summary=f"Claude Code: clear old tool output, then auto-compact at window - {HEADROOM // 1000}k "
            f"({(WINDOW - HEADROOM) // 1000}k of 200k, as measured through 2.1.5)",
    source="Claude Code compact_boundary preTokens measured in 2.0.76 and 2.1.5 transcripts; docs (reference B.5)",
    stages=(
        f"clear:trigger={WINDOW - HEADROOM},keep=3",
        f"compact:headroom_tokens={HEADROOM},keep_recent=0,clear_at_least=0,summarizer=llm",
    ),
    notes=((f"the clearing threshold is fixed at {WINDOW - HEADROOM:,} tokens (a 200k window); compaction follows "
            "the window"),
           "the decompiled v2.1.221 compacts at 167,000 of 200k: claude-code:trigger=167000,headroom_tokens=33000"),
    module=__name__,
))
