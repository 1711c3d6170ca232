"""The shipped sample traces are exactly what their documented commands produce."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ctxsim.formats import native
from ctxsim.synth import synthesize

TRACES = Path(__file__).resolve().parent.parent / "traces"


@pytest.mark.parametrize("name,turns,seed,billing", [("billing-session.jsonl", 60, 0, {}),
                                                    ("long-session.jsonl", 300, 7, None)])
def test_sample_regenerates_byte_for_byte(name, turns, seed, billing):
    out = io.StringIO()
    native.write(synthesize("coding", turns=turns, seed=seed, billing=billing), out)
    assert out.getvalue().encode("utf-8") == (TRACES / name).read_bytes()
