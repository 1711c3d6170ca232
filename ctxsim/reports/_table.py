"""A table as every renderer takes it (terminal, plain text, Markdown, the fitting to a width): a title,
headers and rows of cells already formatted, and how many leading columns are labels."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TableData:
    title: str
    headers: list[str]
    rows: list[list[str]]
    left: int = 1  # how many leading columns are left-aligned labels


__all__ = ["TableData"]
