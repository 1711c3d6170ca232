"""`codex`: Codex CLI's auto-compaction, with its threshold as measured.

Codex rebuilds the history from the model's handoff summary plus the newest user messages kept
verbatim up to 20,000 tokens (reference/providers-and-products.md B.4, codex-rs/core/src/compact.rs).

The threshold, by version (`THRESHOLDS`, newest last; `for_version` picks one):

- before 0.104 (source): 90% of the model's context window (`context_window * 9 / 10`,
  codex-rs/protocol/src/openai_models.rs; a configured `model_auto_compact_token_limit` can only
  lower it).
- 0.104 (measured): a recorded Codex 0.104 compaction fired near 210,000 tokens of a 272,000
  window (77.2%); later builds also cap the usable window at 95% and can count only the body
  after the prefix (`model_auto_compact_token_limit_scope`), which may be why. One recording:
  the default preset follows it, `codex:compact_at=0.9` replays the documented rule.

Not modelled: remote compaction through `/responses/compact` (the summarising request is metered
like any other) and dropping the oldest item when the compaction request itself overflows.
"""

from ctxsim.presets import Preset, register, version_key

# (first version, compact at this fraction of the window, source): newest last
THRESHOLDS: tuple[tuple[str, float, str], ...] = (
    ("0", 0.9, "openai/codex openai_models.rs: context_window * 9 / 10 (reference B.4)"),
    ("0.104", 0.772, "measured: a Codex 0.104 compaction near 210,000 of a 272,000 window (one recording)"),
)
COMPACT_AT = THRESHOLDS[-1][1]


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
    summary=f"Codex CLI: compact at {COMPACT_AT * 100:.1f}% of the window (as measured in 0.104), keeping recent "
            "user messages (20k tokens)",
    source="a recorded Codex 0.104 compaction (210k of 272k); openai/codex auto-compaction (reference B.4)",
    stages=(f"compact:compact_at={COMPACT_AT},keep_recent=0,keep_user_tokens=20000,clear_at_least=0,summarizer=llm",),
    notes=("before 0.104 Codex compacted at 90% of the window: codex:compact_at=0.9",),
    module=__name__,
))
