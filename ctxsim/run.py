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

    def save(self, path: str | Path) -> None:
        """Write `dumps()` (the same bytes) without building it: the rows are turned into JSON one at a time
        as they are written, so a long trace's artefact never sits in memory whole (a 200 MB trace: 58 MB of
        text, 370 MB more at the peak when it was built first)."""
        encoder = json.JSONEncoder(indent=1, sort_keys=True, ensure_ascii=False)
        with atomic_write(path) as out:
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
        "assumption": "open-loop replay: the agent's recorded outputs are replayed unchanged whatever the policy does",
        "seed": None,
    }
    notes = getattr(tokenizer, "notes", None)
    if notes is not None and notes():  # only then: the artefact of any other trace keeps its bytes
        out["tokenizer_notes"] = notes()
    return out
