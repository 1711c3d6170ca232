"""`codex`: Codex CLI's auto-compaction, per version, as the product runs it.

The threshold, by version (`THRESHOLDS`, newest last; `for_version` picks one), as a fraction of the
window the rollout records (`model_context_window`, which later builds give as the usable window, 95%
of the raw one):

- before 0.104 (source): 90% of the model's context window (`context_window * 9 / 10`,
  codex-rs/protocol/src/openai_models.rs, reference B.4; a configured `model_auto_compact_token_limit`
  can only lower it).
- 0.104 (measured): a recorded Codex 0.104 compaction fired near 210,000 tokens; its rollout records a
  258,400-token usable window (95% of 272,000). 210,000 is 77.2% of the raw window but 81.3% of the
  recorded one, which is the window a replay sees: `compact_at=0.8127`. (Taken as 77.2% of the
  recorded window it fired 4 requests early.) One recording.

The threshold is checked on the last response's total (`total_tokens` of the last token count, before the
next request: `trigger_on=last_response`).

The rebuilt history (codex-rs/core/src/compact.rs `build_compacted_history`, and the recorded
`replacement_history` of a Codex Desktop 0.104 compaction: 21 user messages, 15 assistant final
answers and 3 developer messages beside the summary): the summary plus the newest user messages,
assistant final answers (no tool call) and developer messages kept verbatim, up to 20,000 tokens
(`keep_user_tokens=20000,keep_answers=true`).

The summarising request: OpenAI-hosted models compact remotely (`/responses/compact`), billed like a
normal call, the prompt's cached prefix read (providers-2026-update.md): `summarizer_call=cached`.
On other providers the local compaction request omits the tools, so it never matches the cached
prefix and is billed whole (openai/codex #37305): `codex:summarizer_call=prompt`.

Not modelled: dropping the oldest item when the compaction request itself overflows.
"""

from ctxsim.presets import Preset, register, version_key

# (first version, compact at this fraction of the recorded window, source): newest last
THRESHOLDS: tuple[tuple[str, float, str], ...] = (
    ("0", 0.9, "openai/codex openai_models.rs: context_window * 9 / 10 (reference B.4)"),
    ("0.104", 0.8127, ("measured: a Codex 0.104 compaction near 210,000 of its recorded 258,400 usable window "
                       "(one recording)")),
)
COMPACT_AT = THRESHOLDS[-1][1]
KEEP_TOKENS = 20_000


def for_version(version: str | None) -> tuple[str, float, str]:
    """(policy spec, compact_at, source) of the preset as the given Codex version behaves (newest if unknown)."""
    chosen = THRESHOLDS[-1]
    if version and version_key(version):
        chosen = THRESHOLDS[0]
        for entry in THRESHOLDS:
            if version_key(version) >= version_key(entry[0]):
                chosen = entry
    spec = "codex" if chosen[1] == COMPACT_AT else f"codex:compact_at={chosen[1]}"
    return spec, chosen[1], chosen[2]


register(Preset(
    name="codex",
    summary=f"Codex CLI: compact at {COMPACT_AT * 100:.1f}% of the recorded window (0.104), keeping recent user "
            f"messages, final answers and developer messages ({KEEP_TOKENS // 1000}k tokens)",
    source="a recorded Codex 0.104 compaction (210k of a 258,400 usable window) and its replacement_history; "
           "openai/codex auto-compaction (reference B.4)",
    stages=((f"compact:compact_at={COMPACT_AT},trigger_on=last_response,keep_recent=0,"
             f"keep_user_tokens={KEEP_TOKENS},keep_answers=true,clear_at_least=0,summarizer=llm,"
             "summarizer_call=cached"),),
    notes=("before 0.104 Codex compacted at 90% of the window: codex:compact_at=0.9",
           "on a non-OpenAI provider the local compaction request is not cached: codex:summarizer_call=prompt"),
    module=__name__,
))
