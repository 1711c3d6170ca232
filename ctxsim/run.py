"""The saved result of a replay: manifest + per-request rows + events, per policy.

`run.json` is the artefact every report reads; it is written with sorted keys
and no clock, so the same input gives the same bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxsim import __version__
from ctxsim.composition import Composition
from ctxsim.engine import PolicyRun, Replayer
from ctxsim.errors import CtxsimError
from ctxsim.fileio import atomic_write
from ctxsim.meter import EventRecord, Row, Totals
from ctxsim.params import as_dict
from ctxsim.pricing import price_data_latest_change, price_data_version
from ctxsim.tokens import label

SCHEMA = "ctxsim.run/1"


@dataclass
class RunResult:
    manifest: dict[str, Any]
    runs: list[PolicyRun] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return self._tree(lambda rows: [row.to_json() for row in rows])

    def _tree(self, rows_of: Any) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "manifest": self.manifest,
            "runs": [
                {
                    "policy": run.policy,
                    "totals": run.totals.to_json(),
                    "rows": rows_of(run.rows),
                    "events": [event.to_json() for event in run.events],
                    **({"composition": run.composition.to_json()} if run.composition is not None else {}),
                }
                for run in self.runs
            ],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"

    def save(self, path: str | Path, force: bool = False) -> None:
        """Write `dumps()` (the same bytes) without building it: the rows are turned into JSON one at a time
        as they are written, so a long trace's artefact never sits in memory whole (a 200 MB trace: 58 MB of
        text, 370 MB more at the peak when it was built first). Written atomically; a symlink or special file at
        `path` is refused unless `force`."""
        encoder = json.JSONEncoder(indent=1, sort_keys=True, ensure_ascii=False)
        with atomic_write(path, force=force) as out:
            write = out.write
            for chunk in encoder.iterencode(self._tree(_LazyRows)):
                write(chunk)
            write("\n")

    @classmethod
    def load(cls, path: str | Path) -> RunResult:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CtxsimError(f"{path}: no such file") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CtxsimError(f"{path}: not a ctxsim run artefact ({exc})") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise CtxsimError(f"{path}: not a ctxsim run artefact (schema {SCHEMA} expected)")
        runs = []
        for run in data["runs"]:
            rows = [Row.from_json(r) for r in run["rows"]]
            events = [EventRecord(**e) for e in run["events"]]
            window = data["manifest"]["window"]
            reserve = data["manifest"]["output_reserve"]
            block = run.get("composition")
            composition = Composition.from_json(block) if block is not None else None
            runs.append(PolicyRun(run["policy"], rows, events, Totals.of(rows, len(events), window, reserve),
                                  composition))
        return cls(data["manifest"], runs)


class _LazyRows(list):  # type: ignore[type-arg]
    """Rows as the JSON encoder reads a list (with `indent` it walks lists in Python), each row's object made
    only when the encoder gets to it."""

    def __init__(self, rows: list[Row]) -> None:
        super().__init__()
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Any:
        return (row.to_json() for row in self._rows)


def manifest(replayer: Replayer, trace_path: str) -> dict[str, Any]:
    r = replayer.resolved
    trace = replayer.trace
    tokenizer = replayer.sizer.counter.tokenizer
    out = {
        "ctxsim_version": __version__,
        "trace": {"name": trace.name, "path": trace_path, "digest": trace.digest,
                  "sessions": len(trace.sessions),
                  "messages": sum(len(s.messages) for s in trace.sessions)},
        "provider": r.provider,
        "model": r.model_id,
        "window": r.window,
        "output_reserve": replayer.setup.output_reserve,
        "tokenizer": label(tokenizer),
        "tokenizer_exact": tokenizer.exact,
        "framing": as_dict(replayer.sizer.framing),
        "cache_model": {"name": r.cache.name, "params": as_dict(r.cache.params)},
        "prices": price_data_version(),
        "price_data_latest_change": price_data_latest_change(),
        "price_notes": list(replayer.pricer.notes),
        "recorded": recorded_json(trace, replayer.pricer),
        "provider_rules": provider_rules(replayer),
        "assumption": "open-loop replay: the agent's recorded outputs are replayed unchanged whatever the policy does",
        "seed": None,
    }
    notes = getattr(tokenizer, "notes", None)
    if notes is not None and notes():  # only then: the artefact of any other trace keeps its bytes
        out["tokenizer_notes"] = notes()
    return out


def recorded_json(trace: Any, pricer: Any) -> dict[str, Any] | None:
    """The trace's recorded bill (ctxsim.recorded), None when it recorded no usage."""
    from ctxsim.recorded import recorded_of

    return recorded_block(recorded_of(trace, pricer), trace, pricer)


def recorded_block(recorded: Any, trace: Any, pricer: Any) -> dict[str, Any] | None:
    """The manifest's `recorded` entry of a recorded bill (None: none); `trace`: (at least) the sessions up to
    the first that names its provider or model, whose own pricing the bill is compared with."""
    if recorded is None:
        return None
    from ctxsim.engine import Setup, resolve

    try:  # the trace's own provider and model: the `none` run compared with the bill is priced so
        own, _ = resolve(trace, Setup())
        provider, model = own.provider, own.model_id
    except CtxsimError:
        provider, model = pricer.provider_id, pricer.model_id
    return {**recorded.to_json(), "provider": provider, "model": model}


def provider_rules(replayer: Replayer) -> list[str]:
    """The provider's own prompt rules the replay applied (before every policy)."""
    if not replayer.setup.provider_rules or replayer.provider_rule() is None:
        return []
    r = replayer.resolved
    return [(f"{r.provider} {r.model_id}: the reasoning of turns before the latest user message is dropped from "
             "the prompt, as the provider does (every policy, none included)")]


def recorded_of_result(result: RunResult) -> Any:
    """The run's recorded bill (ctxsim.recorded.Recorded), None when the trace recorded no usage."""
    from ctxsim.recorded import Recorded

    block = result.manifest.get("recorded")
    return Recorded.from_json(block) if block else None


def none_run(result: RunResult) -> PolicyRun | None:
    """The `none` run priced as the trace itself was billed (its own provider and model), else None."""
    block = result.manifest.get("recorded") or {}
    for run in result.runs:
        setup = run.policy.get("setup") or {}
        if run.policy["name"] == "none" and (setup.get("provider"), setup.get("model")) == (
                block.get("provider"), block.get("model")):
            return run
    return None


def recorded_gap(result: RunResult) -> Any:
    """(Recorded, Gap of `none` against it), or None when there is no recorded usage or no `none` run."""
    from ctxsim.recorded import gap

    recorded = recorded_of_result(result)
    base = none_run(result)
    if recorded is None or base is None:
        return None
    return recorded, gap(recorded, base.rows, base.totals)


def add_recorded_gap(result: RunResult) -> None:
    """Write `none`'s difference from the recorded bill into the manifest's `recorded` block (run.json)."""
    pair = recorded_gap(result)
    if pair is not None:
        result.manifest["recorded"]["none"] = pair[1].to_json()
