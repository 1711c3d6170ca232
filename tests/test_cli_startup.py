"""Start-up stays light: `ctxsim --help` and `--version` load neither the engine nor the price data."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import ctxsim

HEAVY = ("genai_prices", "pandas", "matplotlib", "numpy", "tiktoken", "pyarrow", "ctxsim.replay.engine",
         "ctxsim.replay.api", "ctxsim.pricing.prices", "rich.markdown", "pygments")

PROBE = """
import json, sys
from ctxsim.cli import main
try:
    main()
except SystemExit:
    pass
sys.stdout.flush()
print("\\n" + json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _modules_after(*args: str) -> tuple[str, set[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=False)
    return done.stdout, set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [("--help",), ("-h",), ("--version",), ("replay", "--help"), ("compare", "-h")])
def test_help_and_version_import_nothing_heavy(args: tuple[str, ...]) -> None:
    out, loaded = _modules_after(*args)
    assert out.strip(), "printed nothing"
    heavy = sorted(name for name in loaded if name.split(".")[0] in HEAVY or name in HEAVY)
    assert heavy == []


def test_version_prints_the_package_version() -> None:
    out, _ = _modules_after("--version")
    assert out.strip() == f"ctxsim {ctxsim.__version__}"


def test_short_help_is_the_same_as_long_help() -> None:
    assert _modules_after("-h")[0] == _modules_after("--help")[0]
    assert "Usage:" in _modules_after("replay", "-h")[0]
