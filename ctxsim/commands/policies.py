"""`ctxsim policies list|show`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ctxsim.cli import app, fail, guarded

policies_app = typer.Typer(help="List the context-management policies and their parameters.", no_args_is_help=True)
app.add_typer(policies_app, name="policies")


@policies_app.command("list")
@guarded
def policies_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every registered policy with its source."""
    from ctxsim.policies import policies

    table = policies()
    if as_json:
        typer.echo(json.dumps({n: {"summary": i.summary, "source": i.source} for n, i in table.items()}, indent=1))
        return
    width = max(len(n) for n in table)
    for name, info in table.items():
        typer.echo(f"{name.ljust(width)}  {info.summary}  [{info.source}]")


@policies_app.command("show")
@guarded
def policies_show(name: str, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """A policy's parameters, their types, defaults and meaning."""
    from ctxsim.params import describe
    from ctxsim.policies import policies

    table = policies()
    if name not in table:
        fail(f"unknown policy {name!r}; known: {', '.join(table)}")
    info = table[name]
    params = describe(info.params)
    if as_json:
        typer.echo(json.dumps({"name": name, "source": info.source, "summary": info.summary,
                               "params": params}, indent=1, default=list))
        return
    typer.echo(f"{name}: {info.summary}\nsource: {info.source}\nparameters:")
    for p in params:
        typer.echo(f"  {p['name']} ({p['type']}, default {p['default']!r}): {p['doc']}")


