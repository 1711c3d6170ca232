"""The `ctxsim` command line: parse, call the library, print. No simulation here."""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Annotated, Any, NoReturn, ParamSpec

import typer

from ctxsim._support import cli_params
from ctxsim.errors import CtxsimError

cli_params.install()  # plain values converted without importing pydantic (see the module)

P = ParamSpec("P")

app = typer.Typer(
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish, PowerShell
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
        raise typer.Exit


DEFAULT_TRACE = "billing-session.jsonl"
INPUT_PARAMS = ("trace", "traces", "run", "base", "new")  # the parameters that name a command's inputs

_debug = False  # --debug given


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process was, so that writes clean up as on SIGINT (exit 143)."""


@app.callback()
def _global_options(
    debug: Annotated[bool, typer.Option(
        "--debug", help="On an internal error, print its traceback (also: CTXSIM_DEBUG=1).")] = False,
    version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print ctxsim's version and exit.")] = False,
) -> None:
    """Replay recorded LLM-agent traces under context-management policies and meter what they cost."""
    global _debug
    _debug = debug


def debugging() -> bool:
    return _debug or os.environ.get("CTXSIM_DEBUG", "") not in ("", "0")


def guarded(command: Callable[P, None]) -> Callable[P, None]:
    """Bad input or usage: one line on stderr, exit code 2, never a traceback. An interruption: one
    line saying what was not written, exit 130 (SIGINT) or 143 (SIGTERM). Anything unexpected: one
    line naming the inputs and asking for a bug report, exit 2 (the traceback with --debug)."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        from ctxsim._support import fileio

        fileio.reset_pending()
        try:
            command(*args, **kwargs)
        except CtxsimError as exc:
            fail(str(exc))
        except KeyboardInterrupt as exc:
            interrupted(exc, fileio.pending())
        except (typer.Exit, typer.Abort, BrokenPipeError):
            raise
        except Exception as exc:  # the last resort: one line, never a traceback
            if isinstance(exc, _click_error("ClickException")):
                raise
            unexpected(exc, _command_name(command), _inputs(kwargs))
            raise typer.Exit(2) from None

    return run


def _command_name(command: Callable[..., None]) -> str:
    """The command as the user typed it (`inspect`, `policies show`), never the function's name."""
    context = _click_context()
    if context is not None and " " in context.command_path:
        return str(context.command_path.partition(" ")[2])
    return next((a for a in sys.argv[1:] if not a.startswith("-")), command.__name__.removesuffix("_command"))


def _inputs(kwargs: dict[str, object]) -> list[str]:
    found: list[str] = []
    for key in INPUT_PARAMS:
        value = kwargs.get(key)
        if isinstance(value, (list, tuple)):
            found.extend(str(v) for v in value)
        elif value is not None:
            found.append(str(value))
    return found


def interrupted(exc: KeyboardInterrupt, unwritten: Sequence[str]) -> None:
    """One line: which signal, and the outputs not written (each left as it was); exit 130 or 143."""
    term = isinstance(exc, Terminated)
    left = f"; did not write {', '.join(unwritten)} (left as it was)" if unwritten else ""
    typer.echo(f"ctxsim: interrupted ({'SIGTERM' if term else 'SIGINT'}){left}", err=True)
    raise typer.Exit(143 if term else 130)


def unexpected(exc: BaseException, command: str | None, inputs: Sequence[str]) -> None:
    """The last resort: an exception no code expected. One line on stderr (the type and where it was
    raised, never its message, which may hold trace content); the traceback too with --debug."""
    import traceback

    if debugging():
        traceback.print_exception(exc, file=sys.stderr)
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    package = str(Path(__file__).resolve().parent)
    ours = [f for f in frames if f.filename.startswith(package)]
    if ours or frames:
        last = (ours or frames)[-1]
        name = os.path.relpath(last.filename, Path(package).parent) if ours else os.path.basename(last.filename)
        where = f" at {name}:{last.lineno}"
    running = f"ctxsim {command}" if command else "ctxsim"
    on = f" on {', '.join(inputs)}" if inputs else ""
    hint = "the traceback above" if debugging() else \
        f"the traceback that `ctxsim --debug {command or '...'} ...` (or CTXSIM_DEBUG=1) prints"
    typer.echo(f"ctxsim: error: internal error in {running}{on}: {type(exc).__name__}{where}. This is a bug: "
               f"please report it, with {hint}", err=True)


def fail(message: str) -> NoReturn:
    typer.echo(error_line(message), err=True)
    raise typer.Exit(2)


def error_line(message: str) -> str:
    """The one line of an error: whatever a reader quoted of a trace passes the secret rules once more
    (a value quoted raw anywhere still never prints a key)."""
    from ctxsim._support.redact import redact

    return f"ctxsim: error: {redact(message)}"


def default_trace() -> str:
    """The shipped sample: the checkout's `traces/` copy, else (an installed package) one made from its recipe."""
    here = Path(__file__).resolve().parent
    for folder in (here.parent / "traces", Path.cwd() / "traces"):
        candidate = folder / DEFAULT_TRACE
        if candidate.is_file():
            return str(candidate)
    from ctxsim.synth.samples import sample_path

    return str(sample_path(DEFAULT_TRACE, None))


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def _click_error(name: str) -> type[Any]:
    """The command-line parser's exception class `name` (typer may vendor click, so not `import click`):
    typed as Any since which class it is is known only at run time."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == name)


def _click_context() -> Any:
    """The running command's context, from the parser typer uses (its own vendored copy of click, or click)."""
    import importlib

    parser = typer.Context.__mro__[1].__module__.rpartition(".")[0]  # 'click' or 'typer._click'
    return importlib.import_module(f"{parser}.globals").get_current_context(silent=True)


def _run_app(args: list[str]) -> int:
    """Parse and run; a usage error is one line like every other error, with where to find help."""
    from ctxsim._support.lazy_cli import command_for

    usage_error, click_exception = _click_error("UsageError"), _click_error("ClickException")
    command = command_for(app, args)
    try:
        code = command.main(args=args, prog_name="ctxsim", standalone_mode=False)
    except usage_error as exc:
        context = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and context is not None:  # `ctxsim` alone: the help
            typer.echo(context.get_help())
            return 0
        where = context.command_path if context is not None else "ctxsim"
        typer.echo(f"ctxsim: error: {exc.format_message()} (see '{where} --help')", err=True)
        return 2
    except click_exception as exc:
        typer.echo(f"ctxsim: error: {exc.format_message()}", err=True)
        return int(getattr(exc, "exit_code", 1))
    except typer.Abort:
        raise KeyboardInterrupt from None
    return code if isinstance(code, int) else 0


def main() -> None:
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        sys.exit(_run_app(sys.argv[1:]))
    except CtxsimError as exc:
        typer.echo(error_line(str(exc)), err=True)
        sys.exit(2)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(0)
    except KeyboardInterrupt as exc:  # outside a command (parsing the command line, loading)
        term = isinstance(exc, Terminated)
        typer.echo(f"ctxsim: interrupted ({'SIGTERM' if term else 'SIGINT'})", err=True)
        sys.exit(143 if term else 130)
    except Exception as exc:  # the last resort, outside a command's own guard
        command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
        unexpected(exc, command, [])
        sys.exit(2)


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
