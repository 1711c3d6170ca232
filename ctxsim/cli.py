"""The `ctxsim` command line: parse, call the library, print. No simulation here."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec

import typer

from ctxsim.errors import CtxsimError

P = ParamSpec("P")

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Replay recorded LLM-agent traces under context-management policies and meter what they cost.",
    pretty_exceptions_enable=False,
    # Plain click help and errors: rich's help renderer alone imports markdown-it and pygments (0.4 s).
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from ctxsim import __version__

        typer.echo(f"ctxsim {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print ctxsim's version and exit."),
) -> None:
    """Replay recorded LLM-agent traces under context-management policies and meter what they cost."""

DEFAULT_TRACE = "billing-session.jsonl"


def guarded(command: Callable[P, None]) -> Callable[P, None]:
    """Bad input or usage: one line on stderr, exit code 2, never a traceback."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            command(*args, **kwargs)
        except CtxsimError as exc:
            fail(str(exc))

    return run


def fail(message: str) -> None:
    typer.echo(f"ctxsim: error: {message}", err=True)
    raise typer.Exit(2)


def default_trace() -> str:
    here = Path(__file__).resolve().parent
    for folder in (here.parent / "traces", Path.cwd() / "traces"):
        candidate = folder / DEFAULT_TRACE
        if candidate.is_file():
            return str(candidate)
    fail(f"no TRACE given and the default sample traces/{DEFAULT_TRACE} is not found; pass a trace file")
    raise AssertionError


def main() -> None:
    try:
        app()
    except CtxsimError as exc:
        typer.echo(f"ctxsim: error: {exc}", err=True)
        sys.exit(2)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(0)
    except KeyboardInterrupt:
        sys.exit(130)


def _load_commands() -> None:
    """Every module in ctxsim/commands registers its commands on `app`."""
    import importlib
    import pkgutil

    from ctxsim import commands

    for module in pkgutil.iter_modules(commands.__path__):
        importlib.import_module(f"{commands.__name__}.{module.name}")


_load_commands()

if __name__ == "__main__":
    main()
