"""What a person reads on a terminal: every table cut to the width it prints to, the notes said once each and
kept short.

- `fit_table` cuts any table (`TableData`) to a width with `_fit.fit_columns`: the key column (the first) and
  the money columns are kept longest; a `FitTable` says its own order, any other table gets the default
  (its label columns, then its money columns, then the rest in table order; the last go first).
- `merge_notes` says a note that several files share once, with a count ("PATH: 3 responses ..." in five
  files becomes one note), `terminal_notes` keeps what a terminal shows to `MAX_NOTE_LINES` lines unless
  `-v` (the rest are counted and pointed to; `--json` and files keep every note as it was).
- `show` prints a command's title, tables and notes either way: rich on a terminal, aligned plain text
  otherwise (the width then from COLUMNS, 80 when unset, so the bytes do not depend on the terminal).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from ctxsim.reports._table import TableData

MAX_NOTE_LINES = 3
_MONEY = re.compile(r"^[+-]?\$\d")
_PATH_NOTE = re.compile(r"^(?P<path>[^\s:][^:]*?[/\\][^:]*?|[^\s:]+\.(?:jsonl?|json\.gz|jsonl\.gz|traj|md)): "
                        r"(?P<text>.+)$")
_NUMBER = re.compile(r"\d[\d,]*")


def width_now() -> int:
    """The width tables are fitted to: the terminal's, or COLUMNS, else 80."""
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


def is_money(table: TableData, c: int) -> bool:
    header = table.headers[c].lower()
    if "cost" in header or "usd" in header or "$" in header or "re-billed" in header or "saving" in header:
        return True
    return any(_MONEY.match(row[c]) for row in table.rows if row[c] not in ("", "-"))


def default_keep(table: TableData) -> tuple[str, ...]:
    """The columns most worth keeping first: the labels, the money, then the rest in table order."""
    n = len(table.headers)
    order = list(range(min(table.left, n))) + [c for c in range(table.left, n) if is_money(table, c)]
    order += [c for c in range(n) if c not in order]
    return tuple(table.headers[c] for c in order)


def fit_table(table: TableData, width: int, rich: bool) -> tuple[TableData, list[str]]:
    """`table` cut to `width` (rich borders when `rich`), and the headers left out."""
    from ctxsim.reports._fit import FitTable, fit_columns

    if not isinstance(table, FitTable):  # the key column is cut no shorter than 40 while a number can go instead
        key = max([len(table.headers[0])] + [len(row[0]) for row in table.rows]) if table.headers else 0
        table = FitTable(table.title, table.headers, table.rows, table.left, keep=default_keep(table),
                         minimum=max(10, min(key, 40)))
    border, edge = (3, 1) if rich else (2, -2)
    return fit_columns(table, width, border, edge)


def fit_all(tables: Sequence[TableData], width: int, rich: bool) -> tuple[list[TableData], str | None]:
    """Every table fitted; one note naming what each left out (None when nothing was)."""
    fitted: list[TableData] = []
    cut: list[str] = []
    for table in tables:
        if len(table.headers) <= 2:  # a label and its value: the value is never cut (rich wraps it)
            fitted.append(table)
            continue
        shown, left_out = fit_table(table, width, rich)
        fitted.append(shown)
        if left_out:
            cut.append(f"{shown.title.split(' (')[0]}: {', '.join(left_out)}")
    if not cut:
        return fitted, None
    return fitted, f"left out to fit {width} columns (--wide or --json shows them): {'; '.join(cut)}"


# ---------------------------------------------------------------- notes
def _split(note: str) -> tuple[str | None, str]:
    m = _PATH_NOTE.match(note)
    return (m["path"], m["text"]) if m else (None, note)


def merge_notes(notes: Sequence[str]) -> list[str]:
    """The notes in order, a note that several files share said once: "N files: ..." with the leading counts
    added up when only they differ, else the first file's words and how many more files say the same."""
    groups: dict[str, list[tuple[str, str]]] = {}
    order: list[str | tuple[str, str]] = []
    for note in notes:
        path, text = _split(note)
        if path is None:
            order.append(note)
            continue
        key = _NUMBER.sub("#", text)
        if key not in groups:
            groups[key] = []
            order.append(("group", key))
        groups[key].append((path, text))
    out: list[str] = []
    for item in order:
        if isinstance(item, str):
            out.append(item)
            continue
        members = groups[item[1]]
        if len(members) == 1:
            out.append(f"{members[0][0]}: {members[0][1]}")
            continue
        out.append(_merged(members))
    return out


def _merged(members: list[tuple[str, str]]) -> str:
    files = len({path for path, _ in members})
    texts = [text for _, text in members]
    lead = [_NUMBER.match(text) for text in texts]
    rests = {text[m.end():] if m else text for text, m in zip(texts, lead, strict=True)}
    if all(lead) and len(rests) == 1:
        total = sum(int(m.group().replace(",", "")) for m in lead if m)
        return f"{files} files: {total:,}{rests.pop()} (-v: each file)"
    return f"{files} files: {texts[0]} (in the first; -v: each file)"


def terminal_notes(notes: Sequence[str], width: int, verbose: bool) -> list[str]:
    """What a terminal shows of `notes` (each printed as `note: ...`, wrapped at `width`): every one with
    `verbose`; else the same notes merged across files, as many whole ones as leave room in
    `MAX_NOTE_LINES` lines for a last line that counts the rest."""
    if verbose:
        return list(notes)
    merged = merge_notes(notes)

    def lines(note: str) -> int:
        return max(1, -(-len(f"note: {note}") // max(width, 20)))

    if sum(lines(n) for n in merged) <= MAX_NOTE_LINES:
        return merged
    shown: list[str] = []
    used = 0
    for note in merged:
        if used + lines(note) > MAX_NOTE_LINES - 1:
            break
        shown.append(note)
        used += lines(note)
    rest = len(merged) - len(shown)  # the notes not shown whole
    if not shown:  # the first alone is longer than the room: its start, cut at a word
        room = (MAX_NOTE_LINES - 1) * max(width, 20) - len("note: ") - 2
        shown.append(merged[0][:room].rsplit(" ", 1)[0] + " …")
    shown.append(f"{rest} more note(s): -v shows them, --json has them all")
    return shown


# ---------------------------------------------------------------- printing
def show(title: str | None, tables: Sequence[TableData], notes: Sequence[str], *, wide: bool = False,
         verbose: bool = False, out: TextIO | None = None, above: Sequence[str] = ()) -> None:
    """A command's title, lines of prose above the tables, the tables fitted (unless `wide`) and the notes."""
    from ctxsim.reports._terminal import plain, prose, rich_table

    out = out or sys.stdout
    terminal = out.isatty()
    console: Any = None
    if terminal:
        from rich.console import Console

        console = Console(file=out)
        width = console.width
    else:
        width = width_now()
    notes = list(notes)
    if not wide:
        tables, cut = fit_all(tables, width, terminal)
        if cut:  # said first: a note a person must read to know what is missing
            notes.insert(0, cut)
    if console is not None:
        if title:
            console.print(title, style="bold", highlight=False, markup=False)
        for line in above:
            prose(console, line)
        for table in tables:
            console.print(rich_table(table))
        for note in terminal_notes(notes, width, verbose):
            console.print(f"note: {note}", style="dim", highlight=False, markup=False)
        return
    if title:
        print(title, file=out)
    for line in above:
        print(line, file=out)
    for table in tables:
        if wide:
            print(f"\n{table.title}", file=out)
        else:  # the title wrapped to the width too (rich wraps its own)
            import textwrap

            print("\n" + "\n".join(textwrap.wrap(table.title, width) or [""]), file=out)
        print(plain(table), file=out)
    print(file=out)
    for note in notes:
        print(f"note: {note}", file=out)
