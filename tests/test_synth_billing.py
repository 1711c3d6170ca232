"""`ctxsim synth --record-usage`: usage as a provider would have billed it, and the calibration recovers it.

Known hidden prefix, token scale and framing in; the calibration's fitted values out, within stated
tolerances. The visible system prompt and tools are billed scaled while the calibration counts them
unscaled, so the prefix to find is `hidden + (scale - 1) x visible fixed` (billing.expected_prefix).
"""

from __future__ import annotations

import io

import pytest
from typer.testing import CliRunner

from ctxsim.analysis.calibrate import calibration
from ctxsim.cli import app
from ctxsim.errors import CtxsimError
from ctxsim.formats import native
from ctxsim.synth import billing, synthesize

runner = CliRunner()
SCALE_TOLERANCE = 0.01  # fitted scale within 0.01 of the one put in
MESSAGE_TOLERANCE = 2  # framing tokens per message
PREFIX_TOLERANCE = 0.01  # share of the expected hidden prefix


@pytest.mark.parametrize(("hidden", "scale", "message"), [(5_000, 1.2, 24), (12_000, 1.05, 8)])
def test_calibration_recovers_the_hidden_prefix_and_scale(hidden, scale, message):
    options = {"hidden_tokens": hidden, "token_scale": scale, "message_tokens": message, "cold_rate": 0.0}
    trace = synthesize("coding", turns=20, seed=3, billing=options)
    assert all(m.usage is not None for m in trace.sessions[0].messages if m.role == "assistant")
    cal = calibration(trace, "o200k_base")
    assert not cal.fell_back, cal.fallback_reason
    assert abs(cal.scale - scale) <= SCALE_TOLERANCE, cal.scale
    assert abs(cal.message_tokens - message) <= MESSAGE_TOLERANCE, cal.message_tokens
    (want,) = billing.expected_prefix(trace, hidden, scale)
    got = cal.prefix_of(trace.sessions[0])
    assert abs(got - want) <= PREFIX_TOLERANCE * want, (got, want)
    assert want > hidden  # the visible system prompt and tools, scaled, are part of it
    # and the calibrated replay reproduces the bill with no cache misses put in
    assert cal.quality["prompt_error_median"] <= 0.005
    assert abs(cal.quality["cost_error"]) <= 0.01


def test_cache_follows_the_timing_and_misses_are_billed_as_rewrites():
    base = {"hidden_tokens": 4_000, "token_scale": 1.1, "message_tokens": 16}
    warm = synthesize("coding", turns=15, seed=1, billing={**base, "cold_rate": 0.0})
    cold = synthesize("coding", turns=15, seed=1, billing={**base, "cold_rate": 1.0})
    w = [m.usage for m in warm.sessions[0].messages if m.role == "assistant"]
    c = [m.usage for m in cold.sessions[0].messages if m.role == "assistant"]
    assert w[0].cache_read_tokens == 0 and w[0].cache_write_tokens > 0  # the first request writes its prefix
    assert all(u.cache_read_tokens > 0 for u in w[1:])  # a warm cache within 5 minutes reads the prefix
    for a, b in zip(w[1:], c[1:], strict=True):  # every miss: nothing read, the whole prefix written again
        assert b.input_tokens == a.input_tokens
        assert b.cache_read_tokens == 0 and b.cache_write_tokens == a.cache_read_tokens + a.cache_write_tokens
    for u in w:
        assert u.cache_read_tokens + u.cache_write_tokens + u.cache_write_1h_tokens <= u.input_tokens


def test_same_seed_same_bytes_and_options_are_checked():
    def text(**options: object) -> str:
        out = io.StringIO()
        native.write(synthesize("coding", turns=5, seed=2, billing=options), out)
        return out.getvalue()

    assert text() == text()
    assert '"billing"' in text() and '"cache_read_tokens"' in text()
    with pytest.raises(CtxsimError, match="unknown option"):
        synthesize("coding", turns=5, billing={"hiden_tokens": 3})
    with pytest.raises(CtxsimError, match="token_scale"):
        synthesize("coding", turns=5, billing={"token_scale": 9})


def test_cli_record_usage(tmp_path):
    out = tmp_path / "b.jsonl"
    result = runner.invoke(app, ["synth", "--turns", "4", "--record-usage", "--billing", "hidden_tokens=3000",
                                 "-o", str(out)])
    assert result.exit_code == 0, result.output
    trace = native.read(str(out))
    assert trace.sessions[0].extra["generator"]["billing"]["hidden_tokens"] == 3000
    assert all(m.usage is not None and m.usage.input_tokens > 3000
               for m in trace.sessions[0].messages if m.role == "assistant")
    bad = runner.invoke(app, ["synth", "--turns", "4", "--billing", "hidden_tokens=3000", "-o", str(out)])
    assert bad.exit_code == 2 and "--record-usage" in bad.output
