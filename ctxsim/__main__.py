"""The `ctxsim` command's entry point: the commands that must start fast are answered before the
command-line framework (typer, click) is imported; everything else goes to `ctxsim.cli`.

`ctxsim --version` prints the version (about the cost of starting Python); `ctxsim statusline` runs the
status line, which a coding agent starts after every turn.
"""

from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    if args == ["--version"]:
        from ctxsim import __version__

        sys.stdout.write(f"ctxsim {__version__}\n")
        sys.exit(0)
    if args == ["statusline"]:
        from ctxsim.analysis.live import main as statusline

        sys.exit(statusline(sys.stdin, sys.stdout))
    from ctxsim.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
