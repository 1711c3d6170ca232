"""The saved result of a replay: manifest + per-request rows + events, per policy.

`run.json` is the artefact every report reads; it is written with sorted keys
and no clock, so the same input gives the same bytes. Per-request rows and
events are stored as columns (schema ctxsim.run/2); ctxsim.run/1 artefacts
(one object per row) still load, and so does a gzip-compressed run.json.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from operator import attrgetter
from pathlib import Path
from typing import Any

from ctxsim import __version__
from ctxsim._support.fileio import atomic_write
from ctxsim.composition import Composition
from ctxsim.errors import CtxsimError
from ctxsim.params import as_dict
from ctxsim.pricing.prices import price_data_latest_change, price_data_version
from ctxsim.replay.engine import PolicyRun, Replayer
from ctxsim.replay.meter import EventRecord, Row, Totals, field_names
from ctxsim.tokens import label

SCHEMA = "ctxsim.run/2"
SCHEMAS = ("ctxsim.run/1", "ctxsim.run/2")  # read both; write the newest
# ctxsim.run/1: "rows" and "events" are lists of objects, one per request / event (indented: ~11 kB per
# request per policy). ctxsim.run/2: the same fields as columns, {"columns": [names], "values": [[column],
# ...]}, each column on one line; money stays exact text. The rest (manifest, policy, totals) is unchanged.


def _columns(records: list[Any], cls: type) -> dict[str, Any]:
    from ctxsim.replay.meter import to_columns

    return {"columns": list(field_names(cls)), "values": to_columns(records, cls)}


def _column(records: list[Any], name: str) -> list[Any]:
    """One field of `records` as `to_columns` gives it (money as text)."""
    from ctxsim.replay.meter import MONEY_FIELDS

    values = list(map(attrgetter(name), records))
    return list(map(str, values)) if name in MONEY_FIELDS else values


def _records(block: Any, cls: type) -> list[Any]:
    """Rows or events from either format: a list of objects (run/1) or columns (run/2)."""
    if isinstance(block, list):
        return [Row.from_json(r) for r in block] if cls is Row else [EventRecord(**e) for e in block]
    names, values = block["columns"], block["values"]
    if not isinstance(names, list) or not isinstance(values, list) or len(names) != len(values):
        raise ValueError("columns and values do not line up")
    if len({len(v) for v in values}) > 1:
        raise ValueError("columns of different lengths")
    n = len(values[0]) if values else 0
    rows = [dict(zip(names, record, strict=True)) for record in zip(*values, strict=True)] if n else []
    return [Row.from_json(r) for r in rows] if cls is Row else [EventRecord(**e) for e in rows]


@dataclass
class RunResult:
    manifest: dict[str, Any]
    runs: list[PolicyRun] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return self._tree(None)

    def _tree(self, mark: Callable[[Callable[[], Any]], str] | None) -> dict[str, Any]:
        """The artefact as JSON data; with `mark`, each data column (and composition row list) is a
        place-holder standing for a function that makes it (`_chunks`)."""

        def block(records: list[Any], cls: type) -> dict[str, Any]:
            if mark is None:
                return _columns(records, cls)
            return {"columns": list(field_names(cls)),
                    "values": [mark(functools.partial(_column, records, name)) for name in field_names(cls)]}

        def composition(of: Composition) -> dict[str, Any]:
            out = of.to_json()
            if mark is not None:
                for key in ("requests", "tokens"):
                    out[key] = mark(functools.partial(lambda value: value, out[key]))
            return out

        def loss(run: PolicyRun) -> dict[str, Any]:
            from ctxsim.loss.meter import to_json

            content = bool((self.manifest.get("loss") or {}).get("include_content"))
            out = to_json(run.loss, run.totals.cost_usd, content)
            if mark is not None:
                for key in ("misses", "refetch_list"):
                    out[key]["values"] = [mark(functools.partial(lambda value: value, column))
                                          for column in out[key]["values"]]
            return out

        return {
            "schema": SCHEMA,
            "manifest": self.manifest,
            "runs": [
                {
                    "policy": run.policy,
                    "totals": run.totals.to_json(),
                    "rows": block(run.rows, Row),
                    "events": block(run.events, EventRecord),
                    **({"composition": composition(run.composition)} if run.composition is not None else {}),
                    **({"loss": loss(run)} if run.loss is not None else {}),
                }
                for run in self.runs
            ],
        }

    def dumps(self) -> str:
        """Indented JSON with sorted keys, each data column (and composition row list) on one line."""
        return "".join(self._chunks())

    def save(self, path: str | Path, force: bool = False) -> None:
        """Write `dumps()` (the same bytes) piece by piece: each column's JSON is made only when it is written,
        so a long trace's artefact never sits in memory whole. Written atomically; a symlink or special file at
        `path` is refused unless `force`."""
        with atomic_write(path, force=force) as out:
            for chunk in self._chunks():
                out.write(chunk)

    def _chunks(self) -> Iterator[str]:
        """The artefact's text in pieces: the indented tree, with each column packed on one line where its
        place-holder stands (a column is made, encoded and let go as its piece is reached)."""
        makers: list[Callable[[], Any] | None] = []

        def mark(make: Callable[[], Any]) -> str:
            makers.append(make)
            return f"\x00{len(makers) - 1}\x00"

        data = self._tree(mark)

        def packed(match: re.Match[str]) -> str:
            i = int(match.group(1))
            make = makers[i]
            makers[i] = None
            if make is None:  # each place-holder stands once in the tree
                raise RuntimeError(f"run.json: place-holder {i} met twice")
            return json.dumps(make(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))

        marker = re.compile(r'"\\u0000(\d+)\\u0000"')
        # a place-holder is a string value: the encoder gives it out inside one piece, never split
        for chunk in json.JSONEncoder(indent=1, sort_keys=True, ensure_ascii=False).iterencode(data):
            yield marker.sub(packed, chunk) if "\\u0000" in chunk else chunk
        yield "\n"

    @classmethod
    def load(cls, path: str | Path) -> RunResult:
        """Read run.json (ctxsim.run/1 or /2; gzip-compressed too, e.g. run.json.gz stored per PR)."""
        try:
            raw = Path(path).read_bytes()
            if raw[:2] == b"\x1f\x8b":
                import gzip

                raw = gzip.decompress(raw)
            data = json.loads(raw.decode("utf-8"))
        except FileNotFoundError:
            raise CtxsimError(f"{path}: no such file") from None
        except (json.JSONDecodeError, UnicodeDecodeError, OSError, EOFError) as exc:
            raise CtxsimError(f"{path}: not a ctxsim run artefact ({exc})") from None
        if not isinstance(data, dict) or data.get("schema") not in SCHEMAS:
            raise CtxsimError(f"{path}: not a ctxsim run artefact (schema {' or '.join(SCHEMAS)} expected)")
        runs = []
        for run in data["runs"]:
            rows = _records(run["rows"], Row)
            events = _records(run["events"], EventRecord)
            window = data["manifest"]["window"]
            reserve = data["manifest"]["output_reserve"]
            block = run.get("composition")
            composition = Composition.from_json(block) if block is not None else None
            totals = Totals.of(rows, len(events), window, reserve)
            span = run.get("totals", {}).get("cost_range_usd")  # not in the rows: kept as saved
            if span is not None:
                totals = replace(totals, cost_range_usd=(Decimal(span[0]), Decimal(span[1])))
            entry = PolicyRun(run["policy"], rows, events, totals, composition)
            if run.get("loss") is not None:
                from ctxsim.loss.meter import from_json

                entry.loss = from_json(run["loss"])
            runs.append(entry)
        return cls(data["manifest"], runs)


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
        "models": list(r.models),  # each request priced at its own session's / message's model
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
    """The trace's recorded bill (ctxsim.replay.recorded), None when it recorded no usage."""
    from ctxsim.replay.recorded import recorded_of

    return recorded_block(recorded_of(trace, pricer), trace, pricer)


def recorded_block(recorded: Any, trace: Any, pricer: Any) -> dict[str, Any] | None:
    """The manifest's `recorded` entry of a recorded bill (None: none); `trace`: (at least) the sessions up to
    the first that names its provider or model, whose own pricing the bill is compared with."""
    if recorded is None:
        return None
    from ctxsim.replay.engine import Setup, own_models, resolve

    try:  # the trace's own provider and models: the `none` run compared with the bill is priced so
        own, _ = resolve(trace, Setup())
        provider, model, models = own.provider, own.model_id, list(own_models(trace))
    except CtxsimError:
        provider, model, models = pricer.provider_id, pricer.model_id, [pricer.model_id]
    return {**recorded.to_json(), "provider": provider, "model": model, "models": models}


def provider_rules(replayer: Replayer) -> list[str]:
    """The provider's own prompt rules the replay applied (before every policy)."""
    if not replayer.setup.provider_rules or replayer.provider_rule() is None:
        return []
    r = replayer.resolved
    from ctxsim.analysis.calibrate import ProviderReasoningRule

    if not ProviderReasoningRule(r.provider, r.model_id, r.models).active:  # no model of the trace drops any
        return []
    return [(f"{r.provider} {r.model_id}: the reasoning of turns before the latest user message is dropped from "
             "the prompt, as the provider does (every policy, none included)")]


def recorded_of_result(result: RunResult) -> Any:
    """The run's recorded bill (ctxsim.replay.recorded.Recorded), None when the trace recorded no usage."""
    from ctxsim.replay.recorded import Recorded

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
    from ctxsim.replay.recorded import gap

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
