"""Progress bars for long runs: on stderr, and only when stderr is a terminal.

    with progress_bar(total=trace_requests * len(policies), description="replaying") as advance:
        for policy in policies:
            replayer.run(policy, progress=advance)

`advance(n)` matches `Replayer.run(policy, progress=...)`: the engine calls it
with 1 after each request. When stderr is not a terminal (piped, CI, --json)
the callback does nothing and nothing is written anywhere; stdout is never
touched. A short run shows nothing either: the bar starts only once the run
has lasted `delay_s`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO


def _noop(n: int = 1) -> None:
    return None


def is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a real stream
        return False


@contextmanager
def progress_bar(total: int | None, description: str = "replaying", *, stream: TextIO | None = None,
                 enabled: bool | None = None, delay_s: float = 0.5,
                 clock: Callable[[], float] = time.monotonic) -> Iterator[Callable[[int], None]]:
    """Yield `advance(n)`; draw a rich bar on `stream` (stderr) if it is a terminal."""
    out = sys.stderr if stream is None else stream
    if enabled is None:
        enabled = is_terminal(out)
    if not enabled:
        yield _noop
        return

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(file=out, force_terminal=True, stderr=out is sys.stderr)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=console, transient=True, auto_refresh=False)
    task = bar.add_task(description, total=total)
    start = clock()
    state = {"started": False, "last": 0.0}

    def advance(n: int = 1) -> None:
        bar.advance(task, n)
        now = clock()
        if not state["started"]:
            if now - start < delay_s:
                return
            state["started"] = True
            bar.start()
        if now - state["last"] >= 0.1:  # at most ten redraws a second
            state["last"] = now
            bar.refresh()

    try:
        yield advance
    finally:
        if state["started"]:
            bar.refresh()
            bar.stop()


__all__ = ["is_terminal", "progress_bar"]
