"""Reports: pure functions of a saved run artefact (run.json); they never re-simulate.

One module per report kind, registered in that module; the module name is the
registry name is the CLI name (`ctxsim report RUN -f md`, `--chart context`).
Third-party reports come through the `ctxsim.reports` entry-point group.

A report renders a `RunResult` in one of its formats to text or bytes; writing
is always atomic (a temporary file renamed over the target), so an interrupted
write leaves the old file or the new one, never a partial one; a bundle folder is
written beside its target and swapped in whole (one run or the one before it).

Modules whose name starts with `_` are helpers; `diff.py` compares two runs
and is used by `ctxsim diff` (it is not a single-run report).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ctxsim._support.fileio import atomic_write, replace_folder
from ctxsim.errors import CtxsimError, did_you_mean
from ctxsim.registry import Registry
from ctxsim.replay.run import RunResult

# Output formats, with the file suffixes they are guessed from.
FORMATS: dict[str, tuple[str, ...]] = {
    "table": (".txt",),
    "md": (".md", ".markdown"),
    "csv": (".csv",),
    "parquet": (".parquet", ".pq"),
    "png": (".png",),
    "svg": (".svg",),
}
BINARY = {"png", "parquet"}
TABLES = ("requests", "runs", "events")  # the tidy tables of the csv and parquet reports
MARKDOWN_LIMIT = 65_536  # a GitHub PR comment body


@dataclass(frozen=True)
class Options:
    """What a render may vary on besides the run (all defaults give the bundle's files)."""

    table: str = "requests"  # csv / parquet: which tidy table
    charts: tuple[tuple[str, str], ...] = ()  # markdown: (title, relative path) of charts to link
    terminal: bool = False  # table: rich output for a terminal instead of plain text
    limit: int = MARKDOWN_LIMIT  # markdown: character budget
    image_base_url: str | None = None  # markdown: where the charts are served (CI artefacts); None: not shown


@dataclass(frozen=True)
class ReportInfo:
    name: str
    formats: tuple[str, ...]
    summary: str
    render: Callable[[RunResult, str, Options], str | bytes]
    module: str
    chart: bool = False
    # Files the report contributes to a bundle: (file name, format, options).
    bundle: Callable[[RunResult], Sequence[tuple[str, str, Options]]] = field(default=lambda result: ())
    # Why the report cannot be drawn for this run (e.g. data it needs is absent), else None.
    unavailable: Callable[[RunResult], str | None] = field(default=lambda result: None)


_REGISTRY: Registry[ReportInfo] = Registry("report", __name__, "ctxsim.reports")


def register(info: ReportInfo) -> None:
    unknown = [f for f in info.formats if f not in FORMATS]
    if unknown:
        raise CtxsimError(f"report {info.name!r} ({info.module}): unknown format(s) {', '.join(unknown)}")
    _REGISTRY.add(info.name, info, info.module)


def reports() -> dict[str, ReportInfo]:
    return _REGISTRY.all()


def charts() -> dict[str, ReportInfo]:
    return {name: info for name, info in reports().items() if info.chart}


def for_format(fmt: str) -> ReportInfo:
    """The single-file report of a non-chart format (md -> markdown, csv -> csv ...)."""
    if fmt not in FORMATS:
        raise CtxsimError(f"unknown format {fmt!r}{did_you_mean(fmt, FORMATS)}; known: {', '.join(FORMATS)}")
    for info in reports().values():
        if not info.chart and fmt in info.formats:
            return info
    raise CtxsimError(f"no report writes format {fmt!r}")


def guess_format(path: str | Path) -> str | None:
    suffix = Path(path).suffix.lower()
    if not suffix:
        return None
    for fmt, suffixes in FORMATS.items():
        if suffix in suffixes:
            return fmt
    raise CtxsimError(f"{path}: cannot tell the format from the suffix {suffix!r}; "
                      f"pass -f ({', '.join(FORMATS)})")


def render(name: str, result: RunResult, fmt: str, options: Options | None = None) -> str | bytes:
    table = reports()
    if name not in table:
        raise CtxsimError(f"unknown report {name!r}; known: {', '.join(table)}")
    info = table[name]
    if fmt not in info.formats:
        raise CtxsimError(f"report {name!r} has no format {fmt!r}; it writes {', '.join(info.formats)}")
    reason = info.unavailable(result)
    if reason:
        raise CtxsimError(f"report {name!r}: {reason}")
    return info.render(result, fmt, options or Options())


def write_file(path: str | Path, content: str | bytes, force: bool = False) -> Path:
    """Write atomically: the old file or the new one, never a partial one (see `fileio.atomic_write`)."""
    with atomic_write(path, "wb" if isinstance(content, bytes) else "w", force) as out:
        out.write(content)
    return Path(path)


def chart_files(result: RunResult, formats: Sequence[str] = ("png", "svg")) -> list[tuple[str, str, str]]:
    """(chart name, format, file name) of every chart this run can draw, in registry order."""
    out: list[tuple[str, str, str]] = []
    for name, info in charts().items():
        if info.unavailable(result):
            continue
        out.extend((name, fmt, f"{name}.{fmt}") for fmt in formats if fmt in info.formats)
    return out


def bundle_entry(name: str, result: RunResult | None = None) -> bool:
    """Whether a folder entry is one a bundle writes (or a temporary file of an interrupted write).

    A folder is replaced whole only when every entry in it is one of these (or with --force), so
    files a user put in it are never deleted silently.
    """
    names = {"run.json"}
    for info in reports().values():
        if info.chart:
            names.update(f"{info.name}.{fmt}" for fmt in info.formats)
        elif result is not None:
            names.update(filename for filename, _, _ in info.bundle(result))
    names.update(f"{table}.{suffix}" for table in TABLES for suffix in ("csv", "parquet"))
    names.add("report.md")
    return name in names or (name.startswith(".") and name.endswith(".tmp"))


def write_bundle(result: RunResult, folder: Path, force: bool = False, image_base_url: str | None = None,
                 ) -> list[Path]:
    """Write run.json, report.md, the charts (PNG and SVG) and the tidy tables into `folder`.

    Returns the paths written, in order. The files are written into a hidden sibling folder that
    then replaces `folder` whole (`fileio.replace_folder`): the folder holds this run or the one
    before it, never a mix, and an interruption leaves no temporary folder. A folder holding
    entries a bundle does not write is refused unless `force` (then they go with the old folder).
    report.md shows the charts as images under `image_base_url` (where CI serves the folder), or
    says how to get them. On a terminal, a progress line on stderr counts the files written.
    The same run gives the same bytes (Parquet aside).
    """
    from ctxsim.reports._common import dumps_run
    from ctxsim.reports._progress import progress_bar

    check_image_base_url(image_base_url)
    folder = Path(folder)
    names: list[str] = []
    table = reports()
    jobs: list[tuple[str, Callable[[], str | bytes]]] = [("run.json", lambda: dumps_run(result))]
    for name, fmt, filename in chart_files(result):
        jobs.append((filename, functools.partial(table[name].render, result, fmt, Options())))
    for info in table.values():
        if info.chart or info.unavailable(result):
            continue
        for filename, fmt, given in info.bundle(result):
            options = Options(charts=markdown_links(result), image_base_url=image_base_url) if fmt == "md" else given
            jobs.append((filename, functools.partial(info.render, result, fmt, options)))

    def fill(into: Path) -> None:
        with progress_bar(total=len(jobs), description=f"writing {folder.name or folder}/") as advance:
            for filename, make in jobs:
                write_file(into / filename, make())
                names.append(filename)
                advance(1)

    replace_folder(folder, fill, force, lambda name: bundle_entry(name, result))
    return [folder / name for name in names]


def check_image_base_url(url: str | None) -> None:
    """A base URL the charts' file names are appended to; one-line error for one that cannot be."""
    if url is None:
        return
    if not url.strip() or any(c.isspace() for c in url) or any(c in url for c in "()<>\"\\"):
        raise CtxsimError(f"--image-base-url {url!r}: give the URL the bundle folder is served under, "
                          "e.g. https://example.org/artifacts/run-42/ (no spaces, brackets or quotes)")


def markdown_links(result: RunResult, fmt: str = "png") -> tuple[tuple[str, str], ...]:
    table = charts()
    return tuple((table[name].summary, filename) for name, f, filename in chart_files(result, (fmt,)) if f == fmt)


__all__ = ["FORMATS", "Options", "ReportInfo", "bundle_entry", "charts", "check_image_base_url", "for_format",
           "guess_format", "register", "render", "reports", "write_bundle", "write_file"]
