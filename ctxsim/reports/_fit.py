"""Fitting a terminal table into a width: text columns are shortened before any number, then the columns
least worth keeping are left out (named, so the caller can say `--wide` shows them).

A column is text when a cell in it holds a letter (a project, a model, a tool, what arrived); numbers,
money, percentages, times and dates hold none and are never cut. `FitTable.keep` orders the columns
by how much they are worth keeping (a column with nothing in it is worth least); the first is never
left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ctxsim.reports._table import TableData

_LETTER = re.compile(r"[^\W\d_]")
_NEUTRAL = {"", "-", "n/a", "never"}
ELLIPSIS = "…"
HARD_MINIMUM = 8  # a text column is cut no shorter than this before it is left out


@dataclass
class FitTable(TableData):
    keep: tuple[str, ...] = ()  # headers, most worth keeping first; the others after them, in table order
    minimum: int = 10  # the narrowest a text column is cut to while a less useful column can go instead


def is_text(table: TableData, c: int) -> bool:
    return any(_LETTER.search(row[c]) for row in table.rows if row[c] not in _NEUTRAL)


def shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + ELLIPSIS


def fit_columns(table: TableData, width: int, border: int = 2, edge: int = -2) -> tuple[TableData, list[str]]:
    """`table` within `width` characters, and the headers left out. Each column costs its text and `border`,
    the table `edge` more (plain text: 2 and -2, two spaces between columns; rich: 3 and 1)."""
    n = len(table.headers)
    if n == 0:
        return table, []
    natural = [max([len(table.headers[c])] + [len(r[c]) for r in table.rows]) for c in range(n)]
    keep = getattr(table, "keep", ()) or ()
    minimum = getattr(table, "minimum", 10)
    order: list[int] = []
    for c in [table.headers.index(h) for h in keep if h in table.headers] + list(range(n)):
        if c not in order:
            order.append(c)
    empty = [c for c in order[1:] if table.rows and all(not r[c] for r in table.rows)]
    order = [c for c in order if c not in empty] + empty  # an empty column is the first to go
    text = {c for c in range(n) if is_text(table, c)}
    chosen = list(range(n))
    sizes = list(natural)

    def total() -> int:
        return sum(sizes[c] + border for c in chosen) + edge

    def squeeze(least: int, only: int | None = None) -> None:
        """Cut the widest text columns (or `only` that one), a character at a time, down to `least`."""
        over = total() - width
        while over > 0:
            wide = [c for c in chosen if c in text and sizes[c] > min(natural[c], least) and only in (None, c)]
            if not wide:
                return
            c = max(wide, key=lambda k: (sizes[k], -k))
            sizes[c] -= 1
            over -= 1

    for c in empty:  # nothing in it: gone before any text is cut
        if total() <= width:
            break
        chosen.remove(c)
    squeeze(minimum)
    while total() > width and len(chosen) > 1:
        victim = next(c for c in reversed(order) if c in chosen and c != order[0])
        if victim in text:  # a text column goes only once it cannot itself be cut shorter
            squeeze(HARD_MINIMUM, victim)
            if total() <= width:
                break
        chosen.remove(victim)
        sizes = list(natural)  # a column gone: the text columns may have room again
        squeeze(minimum)
    chosen.sort()
    left_out = [table.headers[c] for c in range(n) if c not in chosen]
    if left_out or any(sizes[c] < natural[c] for c in chosen):
        headers = [shorten(table.headers[c], sizes[c]) for c in chosen]
        rows = [[shorten(r[c], sizes[c]) if c in text else r[c] for c in chosen] for r in table.rows]
        left = sum(1 for c in chosen if c < table.left)
        return TableData(table.title, headers, rows, left), left_out
    return table, []


def fit_whole_labels(tables: Sequence[TableData], width: int) -> tuple[list[TableData], str | None]:
    """The replay's tables on a rich terminal: the label column is never cut (rich wraps it at words), the
    policy columns after it go from the right until the rest fit; one note naming them."""
    fitted: list[TableData] = []
    cut: list[str] = []
    for table in tables:
        if not table.headers:
            fitted.append(table)
            continue
        label = min(max([len(table.headers[0])] + [len(row[0]) for row in table.rows]), 16)  # wraps past 16
        rest = [row[1:] for row in table.rows]
        trial = FitTable(table.title, ["x" * label, *table.headers[1:]], [["x" * label, *r] for r in rest],
                         table.left, minimum=label,  # the recorded bill kept beside the label
                         keep=("x" * label, *(["recorded"] if "recorded" in table.headers else []), *table.headers[1:]))
        _, left_out = fit_columns(trial, width, 3, 1)
        kept = [c for c, h in enumerate(table.headers) if c == 0 or h not in left_out]
        fitted.append(TableData(table.title, [table.headers[c] for c in kept],
                                [[row[c] for c in kept] for row in table.rows], table.left))
        if left_out:
            cut.append(f"{table.title.split(' (')[0]}: {', '.join(left_out)}")
    if not cut:
        return fitted, None
    return fitted, (f"left out to fit {width} columns (-o report.md, -o run.json or a wider terminal shows "
                    f"them): {'; '.join(cut)}")
