"""`gemini-cli`: Gemini CLI's chat compression, by release date.

Source: reference/providers-and-products.md B.6 (chatCompressionService): compress when the last
prompt reaches a fraction of the model's token limit, keep the newest 30% of the history verbatim
(`COMPRESSION_PRESERVE_THRESHOLD = 0.3`), and summarise the rest into a state snapshot with a second,
verifying model call (`verify`). The threshold (`DEFAULT_COMPRESSION_TOKEN_THRESHOLD`) changed over
time (reference providers-2026-update.md, Gemini CLI row; google-gemini/gemini-cli PRs):

- until 2025-10-30: 0.7 (core/client.ts);
- PR #12306 (merged 2025-10-30): 0.2; PR #13079 then put API-key users back at 0.7 (OAuth users get
  the value from remote configuration, which the log does not record);
- PR #13517 (merged 2025-11-20): 0.5, today's default.

A Gemini CLI chat log records neither the CLI's version nor its compressions, so `THRESHOLDS` is keyed
by the date the change was merged (`for_date` picks one by a session's start; a release ships it days
later). `gemini-cli` is today's rule; `gemini-cli:compact_at=0.7` replays the earlier one.

The threshold is checked on the last prompt's token count (`trigger_on=last_response`). Not modelled:
the split point's alignment to a user message (here the cut only avoids separating tool results from
their calls) and the truncation of large old tool outputs to a 50,000-token budget.
"""

from ctxsim.presets import Preset, register

# (merged on, compress at this fraction of the token limit, source): oldest first
THRESHOLDS: tuple[tuple[str, float, str], ...] = (
    ("0000-00-00", 0.7, "core/client.ts before chatCompressionService (reference B.6)"),
    ("2025-10-30", 0.2, "gemini-cli PR #12306 (API-key users back at 0.7 with PR #13079; OAuth: remote config)"),
    ("2025-11-20", 0.5, "gemini-cli PR #13517: DEFAULT_COMPRESSION_TOKEN_THRESHOLD = 0.5 (reference B.6)"),
)
COMPACT_AT = THRESHOLDS[-1][1]
KEEP = 0.3


def for_date(day: str | None) -> tuple[str, float, str]:
    """(policy spec, threshold, source) for a session started on `day` (YYYY-MM-DD...; None: today's rule)."""
    chosen = THRESHOLDS[-1]
    if day:
        chosen = next(entry for entry in reversed(THRESHOLDS) if day[:10] >= entry[0])
    spec = "gemini-cli" if chosen[1] == COMPACT_AT else f"gemini-cli:compact_at={chosen[1]}"
    return spec, chosen[1], chosen[2]


register(Preset(
    name="gemini-cli",
    summary=f"Gemini CLI: compress at {COMPACT_AT:.0%} of the window (since 2025-11-20; 70% before), keep the newest "
            f"{KEEP:.0%}, two summarising calls",
    source="google-gemini/gemini-cli chatCompressionService (reference B.6); PRs #12306, #13079, #13517",
    stages=((f"compact:compact_at={COMPACT_AT},trigger_on=last_response,keep_fraction={KEEP},clear_at_least=0,"
             "summarizer=llm,verify=true"),),
    notes=("before 2025-10-30 Gemini CLI compressed at 70%: gemini-cli:compact_at=0.7",
           "a Gemini CLI log records neither its version nor its compressions: the threshold goes by date"),
    module=__name__,
))
