"""Fuzz the readers of issue 30 as test_fuzz_readers.py fuzzes the others: structured mutations of each one's
fixture (tests/fixtures/readers/) in, a Trace or a one-line CtxsimError out, never another exception; what a
reader returns converts to native JSONL and reads back the same. Bounded (NEW_EXAMPLES per reader)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz_readers import assert_round_trip, mutate, read_bytes

READERS = Path(__file__).parent / "fixtures" / "readers"
NEW_EXAMPLES = int(os.environ.get("CTXSIM_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=NEW_EXAMPLES, deadline=None, derandomize="CTXSIM_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# (format, fixture, one JSON record a line)
CASES = [
    ("gemini-cli", "gemini-cli/session-rewrite.jsonl", True),
    ("codex", "codex/rollout-order-0.14x.jsonl", True),
    ("opencode", "opencode/export-fix-rounding.json", False),
    ("copilot-cli", "copilot-home/.copilot/session-state/9f0c2e57-3b1a-4c5e-8d7f-0a1b2c3d4e5f/events.jsonl", True),
    ("pi", ("pi-home/.pi/agent/sessions/--home-u-shop--/"
            "2026-03-02T10-00-00-000Z_0193a7b2-5c4d-7e6f-8a9b-0c1d2e3f4a5b.jsonl"), True),
    ("qwen-code", "qwen-home/.qwen/projects/-home-u-shop/chats/6a1f3e0c-2b4d-4e8f-9a0b-1c2d3e4f5a6b.jsonl", True),
    ("amp", "amp-home/.local/share/amp/threads/T-019b9d03-62e3-772f-9780-3e637f90eaec.json", False),
    ("kimi-cli", "kimi-home/.kimi/sessions/4f2a/0b7c9e2d-1111-4a2b-8c3d-5e6f7a8b9c0d/wire.jsonl", True),
    ("cline", "cline-ui-only/1772445601000/ui_messages.json", False),
    ("droid", "droid-home/.factory/sessions/-home-u-proj/4f1c9d2e-7a3b-4c5d-9e8f-0a1b2c3d4e5f.jsonl", True),
]


def _base(relative: str, jsonl: bool) -> Any:
    text = (READERS / relative).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()] if jsonl else json.loads(text)


@pytest.mark.parametrize(("fmt", "relative", "jsonl"), CASES, ids=[c[0] for c in CASES])
@FUZZ
@given(data=st.data())
def test_mutated_new_format_files_are_a_trace_or_a_clean_error(fmt: str, relative: str, jsonl: bool,
                                                               data: st.DataObject) -> None:
    value = mutate(data, _base(relative, jsonl))
    if jsonl and isinstance(value, list):
        raw = "".join(json.dumps(r) + "\n" for r in value).encode("utf-8", "surrogatepass")
    else:
        raw = json.dumps(value).encode("utf-8", "surrogatepass")
    if data.draw(st.booleans(), label="truncate") and raw:
        raw = raw[: data.draw(st.integers(0, len(raw) - 1), label="cut")]
    forced = data.draw(st.booleans(), label="forced format")
    trace = read_bytes(raw, fmt if forced else None, data.draw(st.booleans(), label="skip"), Path(relative).name)
    if trace is not None:
        assert_round_trip(trace)
