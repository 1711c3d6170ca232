"""`claude-code`: Claude Code's automatic compaction, per version, as the product runs it.

The pipeline (each rule with its source):

- No clearing stage. Claude Code's docs say it "clears older tool outputs first" (reference
  providers-and-products.md B.5), but in the recorded auto-compactions (2.0.76, 2.1.5) the product
  did not clear: no clearing record, the prompt climbs without a drop up to the compaction. The
  time-based microcompact (after a 60-minute idle gap, reference providers-2026-update.md; the
  `idle_clear` policy) is in `claude-code-microcompact` only: no transcript shows which versions run it.
- Auto-compact once the prompt passes the window minus a headroom (`THRESHOLDS`, by version): measured
  `compact_boundary` preTokens 155,548 (2.0.76) and 155,554 (2.1.5) of a 200k window: window - 32k output
  reserve - 13k buffer = 155,000; the leaked source of later builds (providers-2026-update.md:
  `effectiveWindow = window - min(maxOutput, 20,000)`, threshold = that - 13,000) gives 167,000,
  taken from 2.1.221 on (not measured in a transcript).
- The threshold is checked on the last response's total (prompt and output: the count the product has
  before it sends the next request, which `compact_boundary` logs as preTokens), `trigger_on=last_response`.
- The window is the one the product uses for the model: 200,000 unless the 1M variant is selected
  (`window_tokens`; `claude-code:window_tokens=1000000` replays the 1M variant). genai-prices lists
  Opus 4.6 at 1M, which the product uses only when asked.
- The whole history is summarised (keep_recent=0); the summary is 5,258 tokens (the mean of the
  5,125 and 5,390 the product wrote in 2.0.76 and 2.1.5 auto-compactions: `summary_tokens`).
- After the summary the product re-attaches its newest files read (at most 5 of 5,000 tokens, 50,000 in
  all), the todo list and the plan (`reattach=claude-code`, ctxsim.policies._reattach).
- The summarising request (`summarizer_call`, `CALLS` by version): before 2.1.30 the log does not
  show it: metered as the whole prompt, uncached. 2.1.30 on write it to `subagents/agent-acompact-*.jsonl`,
  where it reads nearly all of its prompt from the cache (the previous request's prefix): `cached`.
  From 2.1.186 public reports (claude-code #88755, #94197; providers-2026-update.md) say the call
  re-writes the whole context to the cache: `written`.
- Manual `/compact`: the user decides when; `validate` replays it at the request the user asked
  (`at_request`), with the same summary, re-attachment and billing.

`ctxsim validate` and `ctxsim presets check` replay each recorded compaction under the preset for the
transcript's version (ctxsim.analysis.preset_check).
"""

from typing import TypeVar

from ctxsim.presets import Preset, register, version_key

T = TypeVar("T")

WINDOW = 200_000  # the window Claude Code uses unless the 1M variant is selected
SUMMARY_TOKENS = 5_258
# (first version, headroom below the window, source): newest last
THRESHOLDS: tuple[tuple[str, int, str], ...] = (
    ("0", 45_000, ("measured: auto compact_boundary at preTokens 155,548 (2.0.76) and 155,554 (2.1.5) of a 200k "
                   "window: window - 32k output reserve - 13k buffer = 155,000")),
    ("2.1.221", 33_000, ("leaked source (providers-2026-update.md; claude-code #31806, #23409): window - 20k reserve "
                         "- 13k buffer = 167,000 of 200k; not measured in a transcript")),
)
# (first version, how the summarising request is billed, source): newest last
CALLS: tuple[tuple[str, str, str], ...] = (
    ("0", "prompt", "the summarising call is not logged before 2.1.30: the whole prompt, uncached"),
    ("2.1.30", "cached", "2.1.3x acompact subagent logs: the call reads the last request's prefix from the cache"),
    ("2.1.186", "written", "claude-code #88755, #94197: the call re-writes the whole context to the cache"),
)
HEADROOM = THRESHOLDS[0][1]
CALL = CALLS[0][1]


def _pick(table: tuple[tuple[str, T, str], ...], version: str | None) -> tuple[str, T, str]:
    chosen = table[0]
    for entry in table:
        if version_key(version) >= version_key(entry[0]):
            chosen = entry
    return chosen


def for_version(version: str | None) -> tuple[str, int, str]:
    """(policy spec, headroom tokens, source) of the preset as the given Claude Code version behaves."""
    _, headroom, source = _pick(THRESHOLDS, version)
    _, call, call_source = _pick(CALLS, version)
    overrides = []
    if headroom != HEADROOM:
        overrides.append(f"headroom_tokens={headroom}")
    if call != CALL:
        overrides.append(f"summarizer_call={call}")
    spec = "claude-code" + (":" + ",".join(overrides) if overrides else "")
    return spec, headroom, f"{source}; summarising call: {call_source}"


STAGE = (f"compact:headroom_tokens={HEADROOM},window_tokens={WINDOW},trigger_on=last_response,keep_recent=0,"
         f"clear_at_least=0,summarizer=llm,summary_tokens={SUMMARY_TOKENS},reattach=claude-code,"
         f"summarizer_call={CALL}")

register(Preset(
    name="claude-code",
    summary=f"Claude Code: auto-compact at window - {HEADROOM // 1000}k ({(WINDOW - HEADROOM) // 1000}k of 200k), "
            f"a {SUMMARY_TOKENS:,}-token summary, files/todo/plan re-attached; no clearing",
    source="Claude Code compact_boundary preTokens and summaries measured in 2.0.76 and 2.1.5 transcripts; "
           "acompact logs (2.1.3x); reference B.5 and providers-2026-update.md",
    stages=(STAGE,),
    notes=((f"the window is {WINDOW:,} whatever the model's listed window (the 1M variant: "
            "claude-code:window_tokens=1000000)"),
           ("2.1.30 on the summarising call reads the prompt cache (summarizer_call=cached), 2.1.186 on it re-writes "
            "it (summarizer_call=written): validate and presets check pick these by the transcript's version"),
           "the leaked source of later builds compacts at 167,000 of 200k: claude-code:headroom_tokens=33000"),
    module=__name__,
))

register(Preset(
    name="claude-code-microcompact",
    summary="claude-code with the time-based microcompact first: after 60 idle minutes clear all but the newest 5 "
            "tool results",
    source="leaked microCompact.ts / timeBasedMCConfig.ts (providers-2026-update.md); not seen in a transcript",
    stages=("idle_clear:gap_minutes=60,keep=5", STAGE),
    notes=(("which versions run the time-based microcompact by default is not known: the plain claude-code preset "
            "leaves it out, as the recorded compactions show no clearing"),),
    module=__name__,
))
