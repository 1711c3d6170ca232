"""The loss options shared by `compare` and `replay` (ctxsim.loss): metering, probes, the verdict's allowance."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

import typer

LossOpt = Annotated[bool, typer.Option(
    "--loss/--no-loss", help="Meter recall misses (identifiers a later answer uses that the policy removed) and "
                             "their re-fetch cost.")]
ProbeOpt = Annotated[list[str] | None, typer.Option(
    "--probe",
    help="A fact that must survive (text, or re:PATTERN); repeatable. Checked at --probe-at and at the end.")]
ProbesOpt = Annotated[list[str] | None, typer.Option(
    "--probes", help="A TOML file of [[probe]] tables (text = \"...\" or pattern = \"...\", optional name).")]
ProbeAtOpt = Annotated[str | None, typer.Option(
    "--probe-at", help="Request numbers to check the probes at, comma-separated (the end is always checked).")]
MaxMissesOpt = Annotated[int | None, typer.Option(
    "--max-misses", help="Recall misses the starred policy may have (default: the oracle's at the same budget plus "
                         "--miss-margin; with no oracle, the margin).")]
MissMarginOpt = Annotated[int | None, typer.Option(
    "--miss-margin", help="Recall misses allowed beyond the oracle's (default 5).")]
IncludeContentOpt = Annotated[bool, typer.Option(
    "--include-content", help="The miss list in run.json and report.md shows the identifiers themselves, secrets "
                              "redacted; without it only a digest and length.")]


def with_loss(opts: Any, loss: bool, probe: list[str] | None, probes: list[str] | None, probe_at: str | None,
              max_misses: int | None = None, miss_margin: int | None = None, include_content: bool = False) -> Any:
    """`opts` (replay.plan.Options) with the loss settings of the command line."""
    from ctxsim.cli import fail
    from ctxsim.loss.probes import probe_set
    from ctxsim.loss.verdict import DEFAULT_MARGIN

    if max_misses is not None and max_misses < 0:
        fail("--max-misses must not be negative")
    if miss_margin is not None and miss_margin < 0:
        fail("--miss-margin must not be negative")
    checks = probe_set(probe, probes, probe_at)
    if not loss and (max_misses is not None or miss_margin is not None):
        fail("--max-misses and --miss-margin weigh recall misses: drop --no-loss")
    settings = (("max_misses", max_misses), ("miss_margin", DEFAULT_MARGIN if miss_margin is None else miss_margin))
    return replace(opts, loss=loss, probes=checks, loss_settings=settings, include_content=include_content)
