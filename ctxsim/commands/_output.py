"""What `-o PATH` writes, decided from PATH alone, before any work is done.

One rule for every command with `-o`:

- the suffix says the file type: `.json`, `.csv`, `.md`, `.parquet`, `.png`, `.svg`, `.jsonl`, ...
  (each command lists the ones it writes, with what it puts in each);
- `DIR/` (a trailing slash) or an existing folder is the command's bundle folder, for a command that
  has one; an existing folder whose name has a file suffix the command writes is refused by the
  output checks ("is a folder, expected a file"): a name that says a file is not taken for a folder;
- a new path with no suffix is the bundle folder (a command with one), else the command's only file
  type (a command with one); an existing file with no suffix gets the command's `plain` type where it
  has one, and so does a FIFO or device whatever its name (a stream: refused unless --force);
- anything else is one line naming the suffixes the command can write, exit 2, before any input is read.

The output-safety checks (`fileio.check_output` / `check_folder`, atomic writes, `--force`) then apply
unchanged to what was decided.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxsim.errors import CtxsimError

SUFFIXES: dict[str, tuple[str, ...]] = {
    "json": (".json",),
    "jsonl": (".jsonl",),
    "csv": (".csv",),
    "md": (".md", ".markdown"),
    "parquet": (".parquet", ".pq"),
    "png": (".png",),
    "svg": (".svg",),
    "txt": (".txt",),
}
BUNDLE = "bundle"

# What replay and compare write from their run (a RunResult), kind -> what the file holds.
RUN_KINDS: dict[str, str] = {
    "json": "the run artefact",
    "md": "the Markdown report",
    "csv": "the per-request table",
    "parquet": "the per-request table",
    "png": "the context chart",
    "svg": "the context chart",
    BUNDLE: "the report bundle: run.json, report.md, charts, tables",
}


@dataclass(frozen=True)
class Output:
    kind: str  # a key of SUFFIXES, or BUNDLE
    path: Path
    text: str  # as given on the command line

    @property
    def is_bundle(self) -> bool:
        return self.kind == BUNDLE


def kind_of_suffix(suffix: str) -> str | None:
    suffix = suffix.lower()
    return next((kind for kind, known in SUFFIXES.items() if suffix in known), None)


def writes(kinds: Mapping[str, str]) -> str:
    """`.json (the run artefact), .md (...), ... or DIR/ (...)`: what a command's -o can write."""
    parts = [f"{'DIR/' if kind == BUNDLE else SUFFIXES[kind][0]} ({what})" for kind, what in kinds.items()]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def decide(text: str, command: str, kinds: Mapping[str, str], plain: str | None = None) -> Output:
    """What `-o TEXT` writes for `command`, whose -o writes `kinds` (kind -> what it holds, in the order the
    help and errors list them; BUNDLE for a folder); a one-line error for anything it cannot write."""
    from ctxsim._support.fileio import output_path

    path = output_path(text)  # an empty path is refused here
    if text == "-":
        raise CtxsimError(f"-o -: {command} -o writes a file, not stdout (stdout has its tables, or --json); "
                          f"give a path: {writes(kinds)}")
    bundle = BUNDLE in kinds
    files = [k for k in kinds if k != BUNDLE]
    can = f"{command} -o writes {writes(kinds)}"
    if text.endswith(("/", os.sep)):
        if bundle:
            return Output(BUNDLE, path, text)
        raise CtxsimError(f"-o {text}: a folder, but {can}")
    suffix = path.suffix
    kind = kind_of_suffix(suffix) if suffix else None
    if _special(path) and (plain is not None or len(files) == 1):
        return Output(plain or files[0], path, text)  # a FIFO or device is a stream: refused unless --force
    if path.is_dir():
        if kind in files or not bundle:  # a folder named like a file: the checks refuse it, in their words
            return Output(kind or (plain or files[0]), path, text)
        return Output(BUNDLE, path, text)
    if not suffix:
        if os.path.lexists(path) and plain is not None:
            return Output(plain, path, text)
        if bundle:
            return Output(BUNDLE, path, text)
        if len(files) == 1:
            return Output(files[0], path, text)
        raise CtxsimError(f"-o {text}: no suffix to say what to write; {can}")
    if kind not in files:
        raise CtxsimError(f"-o {text}: cannot write {suffix!r} files; {can}")
    return Output(kind, path, text)


def _special(path: Path) -> bool:
    """A FIFO, device or socket (through a link too): what is written into it is a stream, whatever its name."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def parquet_ready(out: Output) -> None:
    """`-o X.parquet` needs pyarrow (the `parquet` extra): say so before the work, not after it."""
    import importlib.util

    if out.kind == "parquet" and importlib.util.find_spec("pyarrow") is None:
        raise CtxsimError(f"-o {out.text}: writing Parquet needs pyarrow: pip install 'ctxsim[parquet]'")


def check(out: Output, inputs: Sequence[str | Path], force: bool,
          ours: Callable[[str], bool] | None = None) -> None:
    """The output-safety checks for what was decided (a file or a folder), and the Parquet dependency."""
    from ctxsim._support.fileio import check_folder, check_output

    parquet_ready(out)
    if out.is_bundle:
        if ours is None:
            check_folder(out.text, list(inputs), force)
        else:
            check_folder(out.text, list(inputs), force, ours)
    else:
        check_output(out.text, list(inputs), force)


def check_run(out: Output, inputs: Sequence[str | Path], force: bool) -> None:
    """`check` for replay and compare: a bundle folder may hold what a bundle writes."""
    from ctxsim.reports import bundle_entry

    check(out, inputs, force, bundle_entry)


def write_run(result: Any, out: Output, force: bool, image_base_url: str | None = None) -> list[Path]:
    """Write a run (replay, compare) as `out` says; the paths written."""
    from ctxsim.reports import Options, render, write_bundle, write_file

    if out.is_bundle:
        return write_bundle(result, out.path, force, image_base_url)
    if out.kind == "json":
        result.save(out.path, force)
        return [out.path]
    name = {"md": "markdown", "csv": "csv", "parquet": "parquet", "png": "context", "svg": "context"}[out.kind]
    options = Options(image_base_url=image_base_url) if out.kind == "md" else Options()
    return [write_file(out.path, render(name, result, out.kind, options), force)]


def option_help(kinds: Mapping[str, str], extra: str = "") -> str:
    return f"Write the results here, as the suffix says: {writes(kinds)}.{(' ' + extra) if extra else ''}"


# ---------------------------------------------------------------- tables as files (sweep, compare of several traces)
def markdown_tables(title: str, tables: Sequence[Any], notes: Sequence[str]) -> str:
    """Terminal tables (TableData) as GitHub Markdown: a heading, each table under its title, the notes."""
    from ctxsim.reports.markdown import cell

    lines = [f"## {cell(title)}", ""]
    for table in tables:
        lines += [f"**{cell(table.title)}**", "",
                  "| " + " | ".join(cell(h) for h in table.headers) + " |",
                  "|" + "|".join(":---" if c < table.left else "---:" for c in range(len(table.headers))) + "|"]
        lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.rows]
        lines.append("")
    lines += [f"- {cell(note)}" for note in notes]
    return "\n".join(lines).rstrip("\n") + "\n"


def write_text(out: Output, content: str | bytes, force: bool) -> Path:
    from ctxsim.reports import write_file

    return write_file(out.path, content, force)
