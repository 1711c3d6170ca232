"""CSV: the tidy tables (requests, runs, events), one file each, byte-stable.

Plain numbers (no thousands separators: these are for machines), money as the
exact decimal strings of run.json, empty cells for missing values, `\\n` line ends.
"""

from __future__ import annotations

import io

from ctxsim.replay.run import RunResult
from ctxsim.reports import TABLES, Options, ReportInfo, register
from ctxsim.reports._frames import frame


def render(result: RunResult, fmt: str, options: Options) -> str:
    out = io.StringIO()
    frame(result, options.table).to_csv(out, index=False, lineterminator="\n")
    return out.getvalue()


def bundle(result: RunResult) -> list[tuple[str, str, Options]]:
    return [(f"{table}.csv", "csv", Options(table=table)) for table in TABLES]


register(ReportInfo("csv", ("csv",), "Tidy tables as CSV: requests, runs, events", render, __name__,
                    bundle=bundle))
