"""`ctxsim policies list|show`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ctxsim.cli import app, fail, guarded

if TYPE_CHECKING:
    from ctxsim.presets import Preset

policies_app = typer.Typer(help="List the context-management policies and their parameters.", no_args_is_help=True)
app.add_typer(policies_app, name="policies")


def _preset_json(preset: Preset) -> dict[str, Any]:
    from ctxsim.params import as_dict

    return {"kind": "preset", "summary": preset.summary, "source": preset.source, "stages": list(preset.stages),
            "setup": {"tokenizer": preset.tokenizer, "cache": preset.cache, "window": preset.window,
                      "provider": preset.provider, "model": preset.model, "pin_tools": list(preset.pin_tools),
                      "framing": as_dict(preset.framing) if preset.framing else None},
            "notes": list(preset.notes)}


@policies_app.command("list")
@guarded
def policies_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every registered policy and preset with its source."""
    from ctxsim.policies import policies
    from ctxsim.presets import presets

    table = policies()
    named = presets()
    if as_json:
        out = {n: {"kind": "policy", "summary": i.summary, "source": i.source} for n, i in table.items()}
        out.update({n: _preset_json(p) for n, p in named.items()})
        typer.echo(json.dumps(out, indent=1, sort_keys=True))
        return
    import re
    import shutil
    import textwrap

    width = max(len(n) for n in [*table, *named])
    columns = max(shutil.get_terminal_size((100, 24)).columns, width + 30)

    def say(name: str, summary: str) -> None:  # wrapped at words under its own column, never mid-word
        summary = re.sub(r"\s*\((?:see )?issue \d+\)|\bseed \d{3}(?:'s)?\s+", " ", summary).strip()  # ours only
        typer.echo(textwrap.fill(summary, columns - 1, initial_indent=f"  {name.ljust(width)}  ",
                                 subsequent_indent=" " * (width + 4), break_long_words=False,
                                 break_on_hyphens=False))

    typer.echo("policies (--policy NAME[:k=v,...]):")
    for name, info in table.items():
        say(name, info.summary)
    typer.echo("presets (--policy NAME[:k=v,...]; k=v applies to the stages that take it):")
    for name, preset in named.items():
        say(name, preset.summary)
    typer.echo("ctxsim policies show NAME: its parameters and origin; --json: everything")


@policies_app.command("show")
@guarded
def policies_show(name: str, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """A policy's parameters (types, defaults, meaning), or a preset's stages and set-up."""
    from ctxsim.params import describe
    from ctxsim.policies import policies
    from ctxsim.presets import presets

    table = policies()
    named = presets()
    if name in named and name not in table:
        data = _preset_json(named[name])
        if as_json:
            typer.echo(json.dumps({"name": name, **data}, indent=1, sort_keys=True))
            return
        typer.echo(f"{name} (preset): {data['summary']}\nsource: {data['source']}\nstages, in order:")
        for stage in data["stages"]:
            typer.echo(f"  {stage}")
        typer.echo("set-up: " + ", ".join(f"{k}={v}" for k, v in data["setup"].items() if v))
        for note in data["notes"]:
            typer.echo(f"note: {note}")
        return
    if name not in table:
        fail(f"unknown policy or preset {name!r}; known: {', '.join([*table, *named])}")
    info = table[name]
    params = describe(info.params)
    if as_json:
        typer.echo(json.dumps({"name": name, "kind": "policy", "source": info.source, "summary": info.summary,
                               "params": params}, indent=1, default=list))
        return
    typer.echo(f"{name}: {info.summary}\nsource: {info.source}\nparameters:")
    for p in params:
        typer.echo(f"  {p['name']} ({p['type']}, default {p['default']!r}): {p['doc']}")
