"""Sniffing: what a file's first bytes are (JSONL, one JSON document, neither), for the readers' `sniff`
functions; the detection that asks them is `ctxsim.formats.detect`."""

from __future__ import annotations

import json
from typing import Any


def sniff_json_head(head: bytes) -> tuple[str, Any]:
    """('jsonl', first record) / ('document', None) / ('none', reason) for a file's first bytes.

    A file that is one JSON object on one line is both; it is given as ('single', the object):
    JSONL readers take it as one line, whole-document readers as a document.
    """
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    stripped = text.lstrip()
    if not stripped:
        return "none", "no data in the first bytes"
    first_line = stripped.split("\n", 1)[0].strip()
    if first_line.startswith("{"):
        try:
            record = json.loads(first_line)
        except (json.JSONDecodeError, RecursionError):
            return "document", None
        if isinstance(record, dict):
            rest = stripped[len(first_line):].lstrip()
            if not rest:
                return "single", record
            if rest.startswith("{"):
                return "jsonl", record
            return "document", None
    if stripped.startswith(("{", "[")):
        return "document", None
    return "none", "not JSON (the first byte is not '{' or '[')"


def head_text(head: bytes) -> str:
    return head.decode("utf-8", errors="replace")


def sniff_jsonl_records(head: bytes, lines: int) -> tuple[list[dict[str, Any]], str | None]:
    """The JSON objects among the first `lines` lines of a JSONL head, or why it is not JSONL."""
    shape, first = sniff_json_head(head)
    if shape not in ("jsonl", "single"):
        return [], "not JSONL" if shape == "document" else first
    records = []
    for raw in head.splitlines()[:lines]:
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):
            continue  # the head may cut its last line
        if isinstance(record, dict):
            records.append(record)
    return records, None


def sniff_json_object_text(head: bytes) -> tuple[str, str | None]:
    """The head of a single JSON-object document as text, or why it is not one."""
    shape, first = sniff_json_head(head)
    if shape not in ("document", "single"):
        return "", "not a single JSON document" if shape == "jsonl" else first
    text = head_text(head)
    if not text.lstrip().startswith("{"):
        return "", "not a JSON object"
    return text, None
