"""Parquet: the tidy tables (requests, runs, events), one file each (needs pyarrow).

Money columns are stored as decimals (exact), not floats. Parquet files embed
writer metadata, so unlike the CSV they are not promised to be byte-stable.
"""

from __future__ import annotations

import importlib.util
import io

from ctxsim.replay.run import RunResult
from ctxsim.reports import TABLES, Options, ReportInfo, register
from ctxsim.reports._frames import frame


def _missing(result: RunResult) -> str | None:
    if importlib.util.find_spec("pyarrow") is None:
        return "Parquet needs pyarrow: pip install 'ctxsim[parquet]'"
    return None


def render(result: RunResult, fmt: str, options: Options) -> bytes:
    out = io.BytesIO()
    frame(result, options.table).to_parquet(out, index=False, engine="pyarrow")
    return out.getvalue()


def bundle(result: RunResult) -> list[tuple[str, str, Options]]:
    return [(f"{table}.parquet", "parquet", Options(table=table)) for table in TABLES]


register(ReportInfo("parquet", ("parquet",), "Tidy tables as Parquet: requests, runs, events", render, __name__,
                    bundle=bundle, unavailable=_missing))
