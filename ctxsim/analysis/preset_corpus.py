"""`ctxsim presets check`: the product presets against every compaction a corpus of the products' own logs
recorded, one line per product and version.

The sessions are grouped as the products wrote them (a Claude Code session with its compacted parts, its
subagents and its compactions' summarising calls; a Codex rollout with its parts), and each group is
checked as `validate` checks a trace (ctxsim.analysis.preset_check, calibrated on the group). A line
says how many compactions (automatic, manual) and how far the preset is from them:

- request offset: the request the preset compacted after, minus the product's (mean of the absolute
  offsets, and the largest); `never` counts the compactions the preset did not make;
- prompt after, cost after, summarizer cost: the preset's relative error against the product's (mean of
  the absolute errors, and the largest), the summarizer only where the product's log has the call;
- within targets: automatic compactions where the preset compacted within 2 requests, its prompt after
  within 10 % and its cost after within 10 % (and its summarizer cost within 25 % where logged).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ctxsim.analysis.preset_check import CompactionCheck, Side, check, compaction_entry
from ctxsim.model import Trace

OFFSET_TARGET = 2
PROMPT_TARGET = 0.10
COST_TARGET = 0.10
SUMMARIZER_TARGET = 0.25


def groups(trace: Trace) -> list[Trace]:
    """The trace's sessions by the product session they belong to (their id up to the first `/`), in order;
    only the groups that recorded a compaction."""
    by: dict[str, list[Any]] = defaultdict(list)
    for s in trace.sessions:
        by[s.id.split("/", 1)[0]].append(s)
    return [Trace(f"{trace.name}:{key}", tuple(sessions)) for key, sessions in by.items()
            if any(e.name == "compaction" for s in sessions for e in s.events)]


def _error(preset: int | Decimal | None, product: int | Decimal | None) -> float | None:
    if preset is None or product is None or not product:
        return None
    return float((Decimal(preset) - Decimal(product)) / Decimal(product))


@dataclass(frozen=True)
class Measured:
    """How far the preset's side is from the product's, for one compaction."""

    offset: int | None  # requests; None: the preset did not compact
    prompt_after: float | None  # relative errors
    cost_after: float | None
    summarizer: float | None

    @staticmethod
    def of(product: Side, preset: Side) -> Measured:
        offset = None if preset.after_request is None or product.after_request is None else \
            preset.after_request - product.after_request
        return Measured(offset, _error(preset.prompt_after, product.prompt_after),
                        _error(preset.cost_after_usd, product.cost_after_usd),
                        _error(preset.summarizer_cost_usd, product.summarizer_cost_usd))

    def within(self) -> bool:
        return (self.offset is not None and abs(self.offset) <= OFFSET_TARGET
                and self.prompt_after is not None and abs(self.prompt_after) <= PROMPT_TARGET
                and self.cost_after is not None and abs(self.cost_after) <= COST_TARGET
                and (self.summarizer is None or abs(self.summarizer) <= SUMMARIZER_TARGET))


@dataclass
class Line:
    product: str
    version: str
    presets: set[str] = field(default_factory=set)
    auto: int = 0
    manual: int = 0
    measured: list[Measured] = field(default_factory=list)
    automatic: list[bool] = field(default_factory=list)

    @property
    def compactions(self) -> int:
        return len(self.measured)

    def _stat(self, values: list[float]) -> tuple[float | None, float | None]:
        if not values:
            return None, None
        return sum(abs(v) for v in values) / len(values), max(values, key=lambda v: (abs(v), v))

    def stats(self) -> dict[str, Any]:
        offsets = [m.offset for m in self.measured if m.offset is not None]
        out: dict[str, Any] = {"product": self.product, "version": self.version, "presets": sorted(self.presets),
                               "compactions": self.compactions, "auto": self.auto, "manual": self.manual,
                               "never": sum(1 for m in self.measured if m.offset is None)}
        mean, worst = self._stat([float(o) for o in offsets])
        out["request_offset"] = {"mean_abs": mean, "worst": None if worst is None else int(worst)}
        for key in ("prompt_after", "cost_after", "summarizer"):
            mean, worst = self._stat([v for m in self.measured if (v := getattr(m, key)) is not None])
            out[f"{key}_error"] = {"mean_abs": mean, "worst": worst,
                                   "n": sum(1 for m in self.measured if getattr(m, key) is not None)}
        autos = [m for m, a in zip(self.measured, self.automatic, strict=True) if a]
        out["within_targets"] = {"auto": len(autos), "within": sum(1 for m in autos if m.within())}
        return out


def summarise(checks: Iterable[CompactionCheck]) -> list[Line]:
    """One line per product and version, in order of product then version."""
    from ctxsim.presets import version_key

    lines: dict[tuple[str, str], Line] = {}
    for c in checks:
        version = c.version or "?"
        line = lines.setdefault((c.product, version), Line(c.product, version))
        line.presets.add(c.preset.split(":", 1)[0])
        automatic = c.trigger != "manual"
        line.auto += automatic
        line.manual += not automatic
        line.measured.append(Measured.of(c.product_side, c.preset_side))
        line.automatic.append(automatic)
    return [lines[k] for k in sorted(lines, key=lambda k: (k[0], version_key(k[1]), k[1]))]


def run(trace: Trace, tokenizer: str = "o200k_base") -> list[CompactionCheck]:
    """Every compaction of every product session in `trace`, checked group by group."""
    out: list[CompactionCheck] = []
    for group in groups(trace):
        out.extend(check(group, tokenizer))
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f}%"


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def table(lines: list[Line]) -> Any:
    from ctxsim.reports._terminal import TableData

    rows = []
    for line in lines:
        st = line.stats()
        off = st["request_offset"]
        rows.append([
            line.product, line.version, ", ".join(st["presets"]),
            f"{st['compactions']} ({st['auto']} auto, {st['manual']} manual)",
            ("-" if off["mean_abs"] is None else f"{off['mean_abs']:.1f} (worst {off['worst']:+d})")
            + (f"; never {st['never']}" if st["never"] else ""),
            *(f"{_mean(st[k]['mean_abs'])} (worst {_pct(st[k]['worst'])})" if st[k]["n"] else "-"
              for k in ("prompt_after_error", "cost_after_error", "summarizer_error")),
            f"{st['within_targets']['within']} of {st['within_targets']['auto']}"])
    return TableData("product presets against the products' own compactions",
                     ["product", "version", "preset", "compactions", "request offset", "prompt after err",
                      "cost after err", "summarizer err", "auto within targets"], rows, left=3)


def notes() -> list[str]:
    return [("request offset: the request the preset compacted after minus the product's (mean of the absolute "
             "offsets); errors: the preset's against the product's (mean of the absolute errors; the worst signed); "
             "cost after: the requests after the product's compaction up to its next one"),
            (f"within targets: an automatic compaction the preset made within {OFFSET_TARGET} requests, with its "
             f"prompt after within {PROMPT_TARGET:.0%} and its cost after within {COST_TARGET:.0%} (its summarizer "
             f"within {SUMMARIZER_TARGET:.0%} where the product's log has the call)"),
            "a manual compaction is replayed at the request the user asked for it: its offset is 0 by construction"]


def to_json(checks: list[CompactionCheck], lines: list[Line]) -> dict[str, Any]:
    return {"lines": [line.stats() for line in lines],
            "compactions": [{"session": c.session, "product_name": c.product, "version": c.version,
                             "trigger": c.trigger, "preset_spec": c.preset, **compaction_entry(c)} for c in checks]}
