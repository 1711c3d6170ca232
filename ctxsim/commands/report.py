"""`ctxsim report RUN.json`: render a saved run artefact; never re-simulates."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ctxsim.cli import app, fail, guarded
from ctxsim.commands._options import ForceOpt

if TYPE_CHECKING:
    from ctxsim.replay.run import RunResult

FORMAT_HELP = ("table, md, csv, parquet, png, svg, json (the run artefact, re-saved), or bundle (run.json, "
               "report.md, charts and tables into a folder). Default: what -o's suffix says (DIR/, an existing "
               "folder or a path without a suffix: a bundle folder), else table.")

# What `report -o` writes, by suffix (with no -f): the error for any other suffix lists them.
REPORT_KINDS = {"txt": "the terminal table", "md": "the Markdown report", "csv": "a tidy table, see --table",
                "parquet": "a tidy table, see --table", "png": "a chart, see --chart", "svg": "a chart, see --chart",
                "json": "the run artefact", "bundle": "the report bundle"}


@app.command()
@guarded
def report(
    run: Annotated[Path, typer.Argument(help="Run artefact (run.json) written by `replay -o` or `compare -o`.")],
    fmt: Annotated[str | None, typer.Option("-f", "--format", help=FORMAT_HELP)] = None,
    output_text: Annotated[str | None, typer.Option(
        "-o", "--output", help="File to write, its suffix saying what (.txt, .md, .csv, .parquet, .png, .svg, "
                               ".json), or a folder (DIR/: the bundle, or several charts); default: stdout for "
                               "table, md and csv.")] = None,
    chart: Annotated[list[str] | None, typer.Option(
        "--chart", help="png/svg: which chart (repeat for several): composition, context, cost, pareto, tokens. "
                        "Default: context for one file, every chart for a folder.")] = None,
    table: Annotated[str, typer.Option(help="csv/parquet: which tidy table: requests, runs or events.")] = "requests",
    with_charts: Annotated[bool, typer.Option(
        "--charts/--no-charts", help="md written to a file: also write its charts beside it and link them.")] = True,
    image_base_url: Annotated[str | None, typer.Option(
        "--image-base-url", help="md and bundle: the URL the charts will be served under (e.g. where CI uploads "
                                 "the folder); report.md shows them as images from there. Without it, report.md "
                                 "leaves them out with a note (a PR comment cannot show relative images).")] = None,
    force: ForceOpt = False,
) -> None:
    """Render a run artefact as terminal tables, Markdown, CSV, Parquet or charts (PNG, SVG)."""
    from ctxsim._support.fileio import check_folder, check_output, output_path
    from ctxsim.reports import FORMATS, TABLES, bundle_entry, check_image_base_url, markdown_links, render, write_bundle
    from ctxsim.reports._common import load_run

    check_image_base_url(image_base_url)
    output = output_path(output_text) if output_text is not None else None

    known = [*FORMATS, "json", "bundle"]
    if fmt is not None and fmt not in known:
        fail(f"unknown format {fmt!r}; known: {', '.join(known)}")
    if table not in TABLES:
        fail(f"unknown table {table!r}; known: {', '.join(TABLES)}")
    folder = output_text is not None and output_text.endswith(("/", os.sep))  # DIR/: a folder, whatever its name
    guessed = _guess(output, output_text) if output is not None and output_text is not None and not folder \
        and not output.is_dir() else None
    if fmt is None:
        fmt = guessed or ("bundle" if output is not None else "table")
    if guessed is not None and guessed != fmt:
        fail(f"-o {output} looks like {guessed}, but the format is {fmt}")
    if fmt == "bundle":
        if output is None:
            fail("bundle: give the folder to write with -o")
        # the bundle's own run.json (report DIR/run.json -o DIR) is read whole, then rewritten from itself
        own = os.path.exists(output / "run.json") and os.path.samefile(run, output / "run.json") \
            if os.path.exists(run) else False
        check_folder(output, [] if own else [run], force, bundle_entry)
    elif output is not None and (fmt not in ("png", "svg") or guessed is not None):
        check_output(output, [run], force)
    if fmt == "parquet":
        from ctxsim.commands._output import Output, parquet_ready

        parquet_ready(Output("parquet", output or Path("-"), output_text or "-"))
    result = load_run(run)
    written: list[Path] = []

    if fmt == "bundle":
        assert output is not None
        written = write_bundle(result, output, force, image_base_url)
    elif fmt == "json":
        if output is None:
            fail("json: give the file to write with -o (the run artefact itself is the JSON)")
        result.save(output, force)
        written = [output]
    elif fmt in ("png", "svg"):
        written = _charts(result, fmt, output, chart, guessed is not None, run=run, force=force)
    elif fmt == "parquet" and output is None:
        fail("parquet is binary: give the file to write with -o")
    elif fmt == "table":
        from ctxsim.reports._terminal import emit

        if output is None:
            emit(result, sys.stdout, None, sys.stdout.isatty())
        else:
            written = [_write(output, render("table", result, "table"), force)]
    else:
        from ctxsim.reports import Options, for_format

        info = for_format(fmt)
        options = Options(table=table)
        if fmt == "md" and output is not None and with_charts:
            written = _charts(result, "png", output.parent, None, False, quiet=True, run=run, force=force)
            written += _charts(result, "svg", output.parent, None, False, quiet=True, run=run, force=force)
            options = Options(charts=markdown_links(result), image_base_url=image_base_url)
        content = render(info.name, result, fmt, options)
        if output is None:
            typer.echo(content, nl=False)
        else:
            written.append(_write(output, content, force))
    for path in written:
        typer.echo(f"wrote {path}", err=True)


def _guess(output: Path, text: str) -> str | None:
    """The format -o's suffix says (None: no suffix); one line naming what report writes for any other."""
    from ctxsim.commands._output import kind_of_suffix, writes
    from ctxsim.reports import FORMATS

    if not output.suffix:
        return None
    if kind_of_suffix(output.suffix) == "json":
        return "json"
    for fmt, suffixes in FORMATS.items():
        if output.suffix.lower() in suffixes:
            return fmt
    fail(f"-o {text}: cannot write {output.suffix!r} files; report -o writes {writes(REPORT_KINDS)} (or pass -f)")


def _write(path: Path, content: str | bytes, force: bool) -> Path:
    from ctxsim.reports import write_file

    return write_file(path, content, force)


def _charts(result: RunResult, fmt: str, output: Path | None, names: list[str] | None, single: bool,
            quiet: bool = False, run: Path | None = None, force: bool = False) -> list[Path]:
    """Charts to one file (`single`) or into a folder, each file checked before any is written."""
    from ctxsim._support.fileio import check_output
    from ctxsim.reports import charts, render

    table = charts()
    for name in names or ():
        if name not in table:
            fail(f"unknown chart {name!r}; known: {', '.join(table)}")
    if output is None:
        fail(f"{fmt}: give -o FILE.{fmt} for one chart, or -o FOLDER for every chart")
    if single:
        chosen = names or ["context"]
        if len(chosen) > 1:
            fail(f"-o {output} is one file: pick one --chart, or give a folder")
        return [_write(output, render(chosen[0], result, fmt), force)]
    if output.exists() and not output.is_dir():
        fail(f"{output}: exists and is not a folder (charts go into a folder here)")
    chosen = []
    for name in names or list(table):
        reason = table[name].unavailable(result)
        if reason and not names:
            if not quiet:
                typer.echo(f"skipped chart {name}: {reason}", err=True)
            continue
        chosen.append(name)
    for name in chosen:
        check_output(output / f"{name}.{fmt}", [run] if run is not None else [], force)
    return [_write(output / f"{name}.{fmt}", render(name, result, fmt), force) for name in chosen]
