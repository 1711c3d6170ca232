"""The shipped sample traces are exactly what their documented commands produce."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from ctxsim.formats import native
from ctxsim.synth import synthesize

TRACES = Path(__file__).resolve().parent.parent / "traces"


@pytest.mark.parametrize(("name", "turns", "seed", "billing"), [("billing-session.jsonl", 60, 0, {}),
                                                    ("long-session.jsonl", 300, 7, None)])
def test_sample_regenerates_byte_for_byte(name, turns, seed, billing):
    out = io.StringIO()
    native.write(synthesize("coding", turns=turns, seed=seed, billing=billing), out)
    assert out.getvalue().encode("utf-8") == (TRACES / name).read_bytes()


def test_every_shipped_sample_has_its_recipe():
    from ctxsim.synth.samples import SAMPLES, sample_text

    assert sorted(SAMPLES) == sorted(p.name for p in TRACES.glob("*.jsonl"))
    for name in SAMPLES:
        assert sample_text(name) == (TRACES / name).read_bytes()


def test_an_installed_package_replays_the_sample_with_no_trace(tmp_path):
    """The package as an install lays it out (setuptools' build_py: the modules and the package data the
    wheel carries, nothing else of the checkout), run from a folder with no traces/ beside it: `ctxsim
    replay` with no trace makes the sample from its recipe in the cache folder and replays it. (Offline:
    build_py needs no download, where building a wheel needs the `wheel` package or an isolated build.)"""
    import hashlib
    import json
    import os
    import shutil
    import subprocess
    import sys

    root = TRACES.parent
    source = tmp_path / "src"
    shutil.copytree(root / "ctxsim", source / "ctxsim", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, source / name)
    site = tmp_path / "site"
    built = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py",
                            "--build-lib", str(site)], cwd=source, capture_output=True, text=True, check=False)
    if built.returncode != 0 and "No module named 'setuptools'" in built.stderr:
        pytest.skip("setuptools is not installed in this environment")
    assert built.returncode == 0, built.stderr
    assert (site / "ctxsim" / "py.typed").is_file() and (site / "ctxsim" / "caching" / "data.toml").is_file()
    assert not (site / "traces").exists()
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    code = "from ctxsim.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", code, "replay", "--json"], cwd=away, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    manifest = json.loads(done.stdout)["manifest"]
    assert manifest["trace"]["name"] == "billing-session"
    assert manifest["trace"]["path"].startswith(str(tmp_path / "cache"))  # made from its recipe, not the checkout's
    shipped = "sha256:" + hashlib.sha256((TRACES / "billing-session.jsonl").read_bytes()).hexdigest()
    assert manifest["trace"]["digest"] == shipped
