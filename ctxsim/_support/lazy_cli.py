"""Build only the commands a command line needs.

Typer turns every registered command into a click command (reading each function's signature and
evaluating its annotations) before it looks at the command line: for `ctxsim inspect ...` that is
fourteen commands built to run one, about half of a short command's start-up. `command_for` builds
the one named (with its group, for `policies` and `formats`); `ctxsim`, `ctxsim --help` and anything it
cannot place get the whole command group, with each top-level command's parameters left out when only
the list of commands is printed (their names and help are all the list shows).
"""

from __future__ import annotations

import copy
import inspect
import os
from typing import Any

import typer


def _name(info: Any) -> str:
    """The command's name, as typer names it."""
    return str(info.name or typer.main.get_command_name(info.callback.__name__))


def _listed(info: Any) -> Any:
    """A command's entry as the command list shows it: its name and help, no parameters."""
    listed = copy.copy(info)
    listed.name = _name(info)
    listed.help = info.help if info.help is not None else inspect.getdoc(info.callback)

    def placeholder() -> None:  # never run: a command line that runs a command builds the real one
        raise RuntimeError("a listed command was run")

    listed.callback = placeholder
    return listed


def command_for(app: typer.Typer, args: list[str]) -> Any:
    """The click command for this command line (see the module's docstring)."""
    if any(key.endswith("_COMPLETE") for key in os.environ):  # shell completion: everything, as typer builds it
        return typer.main.get_command(app)
    name = next((a for a in args if not a.startswith("-")), None)
    sub = copy.copy(app)
    if name is None:
        if not set(args) <= {"--help", "-h"}:  # --version, --install-completion ...: the whole group
            return typer.main.get_command(app)
        sub.registered_commands = [_listed(c) for c in app.registered_commands]
        return typer.main.get_command(sub)
    commands = [c for c in app.registered_commands if _name(c) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if not commands and not groups:  # an unknown command: the group says so, with the names it knows
        return typer.main.get_command(app)
    sub.registered_commands, sub.registered_groups = commands, groups
    return typer.main.get_command(sub)
