"""Table: the terminal tables of `ctxsim replay` (summary, context per request, events).

Rich tables on a terminal, aligned plain text otherwise (stable bytes, no colour).
"""

from __future__ import annotations

import io

from ctxsim.replay.run import RunResult
from ctxsim.reports import Options, ReportInfo, register


def render(result: RunResult, fmt: str, options: Options) -> str:
    from ctxsim.reports._terminal import emit

    out = io.StringIO()
    emit(result, out, None, options.terminal)
    return out.getvalue()


register(ReportInfo("table", ("table",), "Terminal tables: summary, context per request, events", render,
                    __name__))
