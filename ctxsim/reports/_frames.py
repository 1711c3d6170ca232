"""Tidy tables of a run (pandas): one row per request per policy, per run, per event.

Money stays `Decimal` (object columns): CSV writes it exactly as run.json holds
it, Parquet stores it as a decimal type. Column order is fixed by the dataclass
fields, so the same run gives the same CSV bytes.
"""

from __future__ import annotations

import json
from dataclasses import fields
from decimal import Decimal
from typing import Any

from ctxsim.errors import CtxsimError
from ctxsim.replay.meter import MONEY_FIELDS, EventRecord, Row
from ctxsim.replay.run import RunResult
from ctxsim.reports._common import labels

MONEY = (*MONEY_FIELDS, "summarize_cost_usd", "own_cost_usd",  # a row's, and the run total of summarizer calls
         "refetch_cost_usd", "cost_with_refetch_usd")  # loss metered (ctxsim.loss): re-fetches priced
NULLABLE_INT = ("recorded_input_tokens", "recorded_cache_read_tokens")


def _manifest_columns(result: RunResult) -> dict[str, Any]:
    m = result.manifest
    trace = m.get("trace") or {}
    cache = m.get("cache_model") or {}
    return {
        "trace": trace.get("name"), "trace_digest": trace.get("digest"), "provider": m.get("provider"),
        "model": m.get("model"), "window": m.get("window"), "output_reserve": m.get("output_reserve"),
        "tokenizer": m.get("tokenizer"), "cache_model": cache.get("name"), "prices": m.get("prices"),
        "ctxsim_version": m.get("ctxsim_version"),
    }


def requests_frame(result: RunResult) -> Any:
    import pandas as pd

    names = [f.name for f in fields(Row)]
    records = []
    for label, run in zip(labels(result), result.runs, strict=True):
        for row in run.rows:
            record = {"policy": label, "policy_name": run.policy["name"]}
            record.update((name, getattr(row, name)) for name in names)
            records.append(record)
    frame = pd.DataFrame.from_records(records, columns=["policy", "policy_name", *names])
    for name in NULLABLE_INT:
        frame[name] = frame[name].astype("Int64")
    return frame


def runs_frame(result: RunResult) -> Any:
    import pandas as pd

    common = _manifest_columns(result)
    records = []
    for label, run in zip(labels(result), result.runs, strict=True):
        record: dict[str, Any] = {"policy": label, "policy_name": run.policy["name"],
                                  "params": json.dumps(run.policy.get("params") or {}, sort_keys=True)}
        for name, value in run.totals.to_json().items():
            if name == "first_over":
                for key, request in sorted(value.items()):
                    record[f"first_over_{key.replace('-', '_')}"] = request
            elif name == "cost_range_usd" and run.totals.cost_range_usd is not None:  # [low, high]: two columns
                record["cost_range_low_usd"], record["cost_range_high_usd"] = run.totals.cost_range_usd
            elif name in MONEY:
                record[name] = getattr(run.totals, name)
            else:
                record[name] = value
        if run.loss is not None:
            from ctxsim.loss.verdict import cost_with_refetch

            loss = run.loss
            record.update(recall_misses=loss.recall_misses, distinct_identifiers=loss.distinct_identifiers,
                          miss_source_tokens=loss.miss_source_tokens, refetches=len(loss.refetches),
                          refetch_tokens=sum(f.tokens for f in loss.refetches),
                          refetch_cost_usd=loss.refetch_cost_usd if loss.refetch_cost_usd is not None else Decimal(0),
                          cost_with_refetch_usd=cost_with_refetch(run), probes_lost=loss.probes_lost)
        record.update(common)
        records.append(record)
    integers = {name for record in records for name, value in record.items()
                if isinstance(value, int) and not isinstance(value, bool)}
    _add_recorded(result, records, common)
    frame = pd.DataFrame.from_records(records)
    for name in frame.columns:
        if name.startswith("first_over_") or name in integers or name in RECORDED_INT:
            frame[name] = frame[name].astype("Int64")
    return frame


RECORDED_INT = ("own_cost_sessions",)


def _add_recorded(result: RunResult, records: list[dict[str, Any]], common: dict[str, Any]) -> None:
    """The `recorded` row (what was billed) and, on the `none` row, its difference from it."""
    from ctxsim.replay.run import none_run, recorded_gap, recorded_of_result

    rec = recorded_of_result(result)
    if rec is None:
        return
    pair = recorded_gap(result)
    base = none_run(result)
    for record, run in zip(records, result.runs, strict=True):
        if pair is not None and run is base:
            g = pair[1]
            record["vs_recorded_cost"] = None if g.cost_error is None else f"{g.cost_error:.6f}"
            record["vs_recorded_input"] = None if g.input_error is None else f"{g.input_error:.6f}"
    read = rec.cache_read_tokens
    records.append({
        "policy": "recorded", "policy_name": "recorded", "params": "{}", "requests": rec.requests,
        "input_tokens": rec.input_tokens, "fresh_prefill_tokens": rec.input_tokens - read if read is not None else None,
        "cache_read_tokens": read, "cache_write_tokens": rec.cache_write_tokens,
        "cache_write_1h_tokens": rec.cache_write_1h_tokens, "output_tokens": rec.output_tokens,
        "uncached_tokens": rec.input_tokens - read - (rec.cache_write_tokens or 0) - (rec.cache_write_1h_tokens or 0)
        if read is not None else None,
        "hit_rate": round(read / rec.input_tokens, 6) if read is not None and rec.input_tokens else None,
        "peak_context_tokens": rec.peak_context_tokens, "cost_usd": rec.cost_usd,
        "own_cost_usd": rec.own_cost_usd, "own_cost_sessions": rec.own_cost_sessions,
        "recorded_source": rec.source, **common,
    })


def events_frame(result: RunResult) -> Any:
    import pandas as pd

    names = [f.name for f in fields(EventRecord)]
    columns = ["policy", "policy_name", *[n for n in names if n != "policy"], "freed_tokens"]
    records = []
    for label, run in zip(labels(result), result.runs, strict=True):
        for event in run.events:
            record = {"policy": label, "policy_name": run.policy["name"]}
            record.update((n, getattr(event, n)) for n in names if n != "policy")
            record["freed_tokens"] = event.freed_tokens
            records.append(record)
    return pd.DataFrame.from_records(records, columns=columns)


FRAMES = {"requests": requests_frame, "runs": runs_frame, "events": events_frame}


def frame(result: RunResult, table: str) -> Any:
    if table not in FRAMES:
        raise CtxsimError(f"unknown table {table!r}; known: {', '.join(FRAMES)}")
    return FRAMES[table](result)
