"""Ctrl-C during `ctxsim sweep --cluster local`: ctxsim's one line, no worker tracebacks, nothing left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxsim.formats import native
from ctxsim.synth import synthesize

pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")

ENTRY = "import sys; from ctxsim.cli import main; sys.argv[0] = 'ctxsim'; main()"


def _descendants(pid: int, entry: str) -> list[object]:
    """The processes under `pid` started by multiprocessing with `entry` in their command line."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for child in children:
        try:
            if any(entry in part for part in child.cmdline()):
                found.append(child)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def _ignores_sigint(pid: int) -> bool:
    """Whether `pid` ignores SIGINT now: ctxsim does while its local cluster starts."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    return False


@pytest.mark.skipif(sys.platform != "linux", reason="process groups and /proc as on Linux")
def test_ctrl_c_on_a_local_cluster_prints_one_line_and_leaks_nothing(tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for seed in range(2):
        with (corpus / f"t{seed}.jsonl").open("w", encoding="utf-8") as out:
            native.write(synthesize(turns=150, seed=seed), out)
    # a session of its own, so that the signal goes to the whole group as a terminal's Ctrl-C does
    proc = subprocess.Popen([sys.executable, "-c", ENTRY, "sweep", str(corpus), "--cluster", "local",
                             "--budgets", "20k,40k,60k,80k", "-o", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        workers = _descendants(proc.pid, "spawn_main")
        while (len(workers) < 2 or _ignores_sigint(proc.pid)) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
            workers = _descendants(proc.pid, "spawn_main")
        assert len(workers) == 2 and proc.poll() is None, "the local cluster never started"
        tracker = _descendants(proc.pid, "resource_tracker")
        time.sleep(0.5)  # the cells under way
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    lines = err.decode().splitlines()
    assert proc.returncode == 130, "\n".join(lines)
    assert lines == ["ctxsim: interrupted (SIGINT)"], "\n".join(lines)
    assert psutil.wait_procs(workers, timeout=10)[1] == [], "workers left running"
    # the resource tracker unlinks every semaphore still registered when it exits: gone, none leaked
    assert len(tracker) == 1
    assert psutil.wait_procs(tracker, timeout=10)[1] == [], "the resource tracker left running"
