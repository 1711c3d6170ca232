"""`ctxsim formats list|show NAME [--json]`: each trace reader, what it reads, where the product keeps
its files, what it records and what it cannot know. README's format table is generated from the same
data (`python -m ctxsim.docs`), and a test checks that the two agree."""

from __future__ import annotations

import importlib
import json
from typing import Annotated, Any

import typer

from ctxsim.cli import app, fail, guarded

formats_app = typer.Typer(help="List the trace formats ctxsim reads and what each records.", no_args_is_help=True)
app.add_typer(formats_app, name="formats")

FIELDS = ("reads", "location", "records", "cannot_know", "checked")
LABELS = {"reads": "reads", "location": "where the product keeps it", "records": "what it records",
          "cannot_know": "what it cannot know", "checked": "checked against"}
# The native format's module is edited elsewhere; its description lives here until it carries its own ABOUT.
FALLBACK = {
    "native": {
        "reads": "ctxsim's own JSONL v1 (session headers, message and event records), strict",
        "location": "written by `ctxsim convert` and `ctxsim synth`, or by any tool that logs in it",
        "records": "whatever the writer put in: messages, tool calls and results, times, usage in the inclusive "
                   "convention, events such as compactions",
        "cannot_know": "nothing beyond what the writer recorded",
        "checked": "ctxsim's native JSONL v1 (written by ctxsim convert and synth)",
    },
}


def describe_formats() -> dict[str, dict[str, Any]]:
    """Every registered format: its description and the four ABOUT fields (sorted by name)."""
    from ctxsim.formats import formats

    out: dict[str, dict[str, Any]] = {}
    for name, info in formats().items():
        module = importlib.import_module(info.module)
        about = getattr(module, "ABOUT", None) or FALLBACK.get(name) or {}
        out[name] = {"description": info.description, "module": info.module,
                     **{k: about.get(k) or "not described" for k in FIELDS}}
    return out


def readme_table() -> str:
    """README's format table (Markdown), generated from each reader's description."""
    rows = [("| format | reads | where the product keeps it | what it records | what it cannot know "
             "| checked against |"), "|---|---|---|---|---|---|"]
    for name, d in describe_formats().items():
        cells = [f"`{name}`"] + [str(d[k]).replace("|", "\\|") for k in FIELDS]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


@formats_app.command("list")
@guarded
def formats_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Every trace format ctxsim reads (`--format NAME`), with what it reads."""
    from ctxsim.discover import discover

    table = describe_formats()
    found = {entry.source: entry for entry in discover()}
    if as_json:
        for name, entry in found.items():
            table[name]["discovered"] = {"files": len(entry.files),
                                         "looked_in": [{"folder": p.folder, "why": p.why, "exists": p.exists,
                                                        "files": len(p.files)} for p in entry.places]}
        typer.echo(json.dumps(table, indent=1, sort_keys=True))
        return
    width = max(len(n) for n in table)
    typer.echo("trace formats (detected from the first bytes; --format NAME forces one):")
    for name, d in table.items():
        typer.echo(f"  {name.ljust(width)}  {d['reads']}")
        typer.echo(f"  {''.ljust(width)}    checked against: {d['checked']}")
    typer.echo("\nsessions on this machine (what `ctxsim inspect` with no path reads; --source NAME for one):")
    for name, entry in found.items():
        typer.echo(f"  {name.ljust(width)}  {len(entry.files)} file(s)")
        for p in entry.places:
            state = f"{len(p.files)} file(s)" if p.exists else "not found"
            typer.echo(f"  {''.ljust(width)}    {p.folder} ({p.why}): {state}")


@formats_app.command("show")
@guarded
def formats_show(name: str, as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """One format: what it reads, where the product keeps its files, what it records, what it cannot know."""
    table = describe_formats()
    if name not in table:
        fail(f"unknown format {name!r}; known: {', '.join(table)}")
    d = table[name]
    if as_json:
        typer.echo(json.dumps({"name": name, **d}, indent=1, sort_keys=True))
        return
    typer.echo(f"{name}: {d['description']}")
    for key in FIELDS:
        typer.echo(f"{LABELS[key]}: {d[key]}")
