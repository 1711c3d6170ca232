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
    """The wheel, built from a copy of the checkout (offline: setuptools and `wheel` from the test extra,
    no build isolation, no index) and installed into a fresh virtual environment, run from a folder with
    no traces/ beside it: `ctxsim replay` with no trace makes the sample from its recipe in the cache folder
    and replays it. The environment has only the wheel; its dependencies come from this one's site-packages
    on PYTHONPATH (where this checkout's editable install is not importable: no .pth runs there)."""
    import hashlib
    import json
    import os
    import shutil
    import subprocess
    import sys
    import sysconfig
    import zipfile

    pytest.importorskip("wheel", reason="building the wheel offline needs the `wheel` package (the test extra)")
    root = TRACES.parent
    source = tmp_path / "src"
    shutil.copytree(root / "ctxsim", source / "ctxsim", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, source / name)
    dist = tmp_path / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                            "-q", "-w", str(dist), str(source)], capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("ctxsim-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "ctxsim/py.typed" in names and "ctxsim/caching/data.toml" in names
    assert "ctxsim/analysis/calibration_priors.toml" in names
    assert not any(n.startswith("traces/") for n in names)  # the samples are made from recipes, not shipped
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                                "--no-index", "-q", str(wheel)], capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stderr
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"], "XDG_CACHE_HOME": str(tmp_path / "cache")}
    where = subprocess.run([str(python), "-c", "import ctxsim; print(ctxsim.__file__)"], cwd=away, env=env,
                           capture_output=True, text=True, check=True)
    assert where.stdout.startswith(str(venv))  # the installed wheel, not the checkout
    code = "from ctxsim.cli import main; main()"
    done = subprocess.run([str(python), "-c", code, "replay", "--json"], cwd=away, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    manifest = json.loads(done.stdout)["manifest"]
    assert manifest["trace"]["name"] == "billing-session"
    assert manifest["trace"]["path"].startswith(str(tmp_path / "cache"))  # made from its recipe, not the checkout's
    shipped = "sha256:" + hashlib.sha256((TRACES / "billing-session.jsonl").read_bytes()).hexdigest()
    assert manifest["trace"]["digest"] == shipped
