from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing in the suite may reach the network."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled in tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(autouse=True, scope="session")
def price_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The price cache (ctxsim/pricing/prices.py) in a folder of the test session's, not the user's cache folder."""
    import os

    from ctxsim.pricing import prices as pricing

    previous = os.environ.get("CTXSIM_PRICE_CACHE")
    os.environ["CTXSIM_PRICE_CACHE"] = str(tmp_path_factory.mktemp("price-cache"))
    pricing.reset_price_cache()
    yield
    if previous is None:
        os.environ.pop("CTXSIM_PRICE_CACHE", None)
    else:
        os.environ["CTXSIM_PRICE_CACHE"] = previous
    pricing.reset_price_cache()


@pytest.fixture(autouse=True, scope="session")
def accounting_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The accounting index (ctxsim/analysis/file_index.py) in a folder of the test session's."""
    import os

    previous = os.environ.get("CTXSIM_INDEX")
    os.environ["CTXSIM_INDEX"] = str(tmp_path_factory.mktemp("accounting-index"))
    yield
    if previous is None:
        os.environ.pop("CTXSIM_INDEX", None)
    else:
        os.environ["CTXSIM_INDEX"] = previous


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def tiny_records() -> list[dict]:
    return [
        {"type": "session", "version": 1, "id": "tiny", "model": "claude-sonnet-4-5", "provider": "anthropic",
         "window": 200000, "system": "You are a coding agent.", "ts": "2026-01-13T16:56:00Z"},
        {"type": "message", "role": "user", "content": "Invoice totals in BRL are off by one cent.",
         "ts": "2026-01-13T16:56:01Z"},
        {"type": "message", "role": "assistant", "content": "Reading the invoice module.",
         "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "src/billing/invoice.py"}}],
         "ts": "2026-01-13T16:56:04Z"},
        {"type": "message", "role": "tool", "tool_call_id": "c1", "name": "read_file",
         "content": "def total(x):\n    return round(x, 2)\n", "ts": "2026-01-13T16:56:05Z"},
        {"type": "message", "role": "assistant", "content": "Found it.",
         "usage": {"input_tokens": 1800, "cache_read_tokens": 0, "cache_write_tokens": 1700, "output_tokens": 40},
         "ts": "2026-01-13T16:56:08Z"},
    ]
