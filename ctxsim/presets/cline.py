"""`cline`: Cline's auto-condense.

Source: reference/providers-2026-update.md, Cline row (cline/cline PR #9348, merged 2026-02-17:
auto-condense hard-coded at 0.75 of the context window; PR #9396 removed the user setting) and
reference/providers-and-products.md B.7 (the trigger is the previous request's tokens in, out and
cached: `trigger_on=last_response`). Cline condenses by asking the model itself, inside the
conversation (its `summarize_task` / condense tool), so the summarising request shares the
conversation's cached prefix (`summarizer_call=cached`); the summary then replaces the history.

Not modelled: the legacy truncation (window - 40,000 for 200k models, dropping half or a quarter of the
history, reference B.7), which Cline used before auto-condense and still uses with it off
(`truncate` replays a cut of that kind); the wrong 1M-window detection of cline #9181.
"""

from ctxsim.presets import Preset, register

COMPACT_AT = 0.75

register(Preset(
    name="cline",
    summary=f"Cline: auto-condense at {COMPACT_AT:.0%} of the window, the model's own summary from the cached prompt",
    source="cline/cline PR #9348 (0.75, hard-coded) and #9396; reference B.7",
    stages=((f"compact:compact_at={COMPACT_AT},trigger_on=last_response,keep_recent=0,clear_at_least=0,summarizer=llm,"
             "summarizer_call=cached"),),
    notes=("the legacy truncation (window - 40k, half or quarter of the history) is not part of this preset",),
    module=__name__,
))
