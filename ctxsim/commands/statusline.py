"""`ctxsim statusline`: one line for Claude Code's status line (ctxsim.analysis.live). `ctxsim statusline`
itself is answered by `ctxsim.__main__` before typer loads; this registration gives it its help."""

from __future__ import annotations

import sys

from ctxsim.cli import app, guarded


@app.command("statusline")
@guarded
def statusline_command() -> None:
    """One line for Claude Code's status line: session cost so far, context used of the window, cache hit
    rate, requests. Reads the JSON Claude Code passes on stdin; the transcript is read incrementally.
    In ~/.claude/settings.json: {"statusLine": {"type": "command", "command": "ctxsim statusline"}}."""
    from ctxsim.analysis.live import main

    code = main(sys.stdin, sys.stdout)
    if code:
        raise SystemExit(code)
