"""The inputs of a command that reads sessions: the paths given, or with none the sessions discovered where
the agents keep them (`ctxsim.discover`), as `inspect` does. Used by `validate` and `convert`."""

from __future__ import annotations

from typing import Annotated

import typer

from ctxsim.cli import fail

OptionalTracesArg = Annotated[list[str] | None, typer.Argument(
    help="Trace files or directories (searched recursively); '-' reads stdin; .gz is fine. None: the sessions "
         "found where the agents keep them (`ctxsim formats list` shows where).")]
SourceOpt = Annotated[str | None, typer.Option(
    help="With no path: only this product's sessions (a format name, e.g. claude-code, codex, gemini-cli, cline).")]


def inputs(traces: list[str] | None, source: str | None, fmt: str | None) -> tuple[list[str], str | None]:
    """(paths, format): the paths given (`--source` refused beside them), else every session file found (one
    line on stderr says how many, from where); the format is `--source`'s when it names one."""
    if source is not None and traces:
        fail("--source picks among the sessions found with no path; give either paths or --source")
    if traces:
        return traces, fmt
    from ctxsim.discover import discovered_files

    found = discovered_files(source)  # none found: one line naming where it looked
    sources = sorted({name for _, name in found})
    typer.echo(f"ctxsim: reading {len(found):,} session file(s) found where the agents keep them "
               f"({', '.join(sources)})", err=True)
    return [path for path, _ in found], fmt or source
