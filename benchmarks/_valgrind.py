"""Machine instructions of a command, counted by valgrind's cachegrind: a load-independent measure.

On a shared machine, wall and CPU times of the same run swing by tens of per cent with the others'
load; the instructions a run executes do not. They miss what the memory and the branch predictor add,
so a benchmark prints them beside its times, never instead of them.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence


def available() -> bool:
    return shutil.which("valgrind") is not None


def instructions_of(argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None) -> int:
    """The instructions running `argv` executes (its whole process: subtract a baseline run for a part of it)."""
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           *argv], env=dict(env) if env is not None else None, capture_output=True, text=True,
                          cwd=cwd, check=True)
    refs = [line for line in done.stderr.splitlines() if "I   refs:" in line or "I refs:" in line]
    return int(refs[-1].rsplit(":", 1)[1].replace(",", "").strip())
