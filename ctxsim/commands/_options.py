"""Options shared by the commands that replay (`replay`, `compare`): one definition each."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ctxsim.cli import fail

if TYPE_CHECKING:
    from ctxsim.replay.api import Options
    from ctxsim.replay.run import RunResult

TraceArg = Annotated[str | None, typer.Argument(
    help="Trace file or folder, any supported format; default: the shipped sample trace.")]
ProviderOpt = Annotated[str | None, typer.Option(help="Provider to price as (default: the trace's).")]
ModelOpt = Annotated[str | None, typer.Option(help="Model to price as (default: the trace's).")]
TokenizerOpt = Annotated[str | None, typer.Option(
    help="o200k_base (exact, default), cl100k_base (exact), chars4, bytes4 (estimates).")]
CacheOpt = Annotated[str | None, typer.Option(help="Cache model NAME[:k=v]: anthropic, openai, prefix, none.")]
CacheTtlOpt = Annotated[str | None, typer.Option("--cache-ttl", help="Anthropic cache TTL: 5m or 1h.")]
WindowOpt = Annotated[int | None, typer.Option(help="Context window in tokens (default: trace, then model).")]
ReserveOpt = Annotated[int, typer.Option(help="Output reserve in tokens, for the overflow line.")]
FormatOpt = Annotated[str | None, typer.Option("--format", help="Trace format (default: detected).")]
FramingOpt = Annotated[str | None, typer.Option(
    help="Framing tokens k=v,...: message_tokens (4), tool_call_tokens (4), tool_result_tokens (0), "
         "tool_schema_tokens (8).")]
CalibrateOpt = Annotated[bool, typer.Option(
    "--calibrate/--no-calibrate", help="Fit the hidden prefix, token scale and per-message overhead from the "
    "recorded usage, then replay (default, where the trace recorded usage); --no-calibrate replays raw.")]
SkipBadOpt = Annotated[bool, typer.Option("--skip-bad-lines", help="Skip malformed lines and say how many.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print totals as JSON for machines.")]
JobsOpt = Annotated[int | None, typer.Option(
    "--jobs", "-j", help="Processes for counting and the runs, this one included (1: this one alone); default: one "
                         "per core when the trace is big.")]
OutputOpt = Annotated[str | None, typer.Option("-o", "--output", help="Where to write the results.")]
ForceOpt = Annotated[bool, typer.Option(
    "--force", help="Write the output even where it would replace an input, a symlink's target, a device or FIFO "
                    "(written into), or a folder holding files ctxsim did not write.")]
MaxLineBytesOpt = Annotated[str | None, typer.Option(
    "--max-line-bytes", help="Refuse a JSONL line longer than this (bytes; K, M, G suffixes: 1024s). Default 64M.")]
MaxInputBytesOpt = Annotated[str | None, typer.Option(
    "--max-input-bytes", help="Refuse an input bigger than this once decompressed (bytes; K, M, G). Default 1G.")]
MaxMessagesOpt = Annotated[int | None, typer.Option(
    "--max-messages", help="Refuse a trace of more messages than this, every input together. Default 10,000,000.")]


def options(provider: str | None, model: str | None, tokenizer: str | None, cache: str | None,
            cache_ttl: str | None, window: int | None, reserve: int, framing: str | None = None,
            calibrate: bool = False, skip_bad_lines: bool = False, jobs: int | None = None) -> Options:
    # Imported here, not at the top: `ctxsim --help` must not load the engine and the price data.
    from ctxsim.params import build_params, split_spec
    from ctxsim.replay.api import Options
    from ctxsim.tokens.counting import Framing

    if cache_ttl is not None and cache_ttl not in ("5m", "1h"):
        fail(f"--cache-ttl must be 5m or 1h, got {cache_ttl!r}")
    if window is not None and window <= 0:
        fail("--window must be positive")
    if reserve < 0:
        fail("--reserve must not be negative")
    if jobs is not None and jobs < 1:
        fail(f"--jobs must be at least 1, got {jobs}")
    frame = None
    if framing:
        frame = build_params(Framing, split_spec("framing:" + framing)[1], "--framing")
    return Options(provider=provider, model=model, tokenizer=tokenizer, cache=cache, cache_ttl=cache_ttl,
                   window=window, reserve=reserve, framing=frame, calibrate=calibrate, skip_bad_lines=skip_bad_lines,
                   jobs=jobs)


def spec_files(specs: list[str] | None) -> list[str]:
    """The policy files among policy specs (FILE.toml[#name], FILE.json): inputs an output must not replace."""
    import os

    found = []
    for spec in specs or ():
        for part in spec.split("+"):
            path = part.split("#", 1)[0]
            if path.endswith((".toml", ".json")) and os.path.isfile(path):
                found.append(path)
    return found


def totals_json(result: RunResult) -> dict[str, Any]:
    from ctxsim.replay.recorded import recorded_json

    def run_json(r) -> dict:  # type: ignore[no-untyped-def]
        out = {"policy": r.policy, "totals": r.totals.to_json()}
        if getattr(r, "loss", None) is not None:  # ctxsim.loss: the figures, not the miss list
            from ctxsim.loss.meter import to_json

            loss = to_json(r.loss, r.totals.cost_usd, False)
            out["loss"] = {k: v for k, v in loss.items() if k not in ("misses", "refetch_list")}
        return out

    return {"manifest": result.manifest,
            "runs": [run_json(r) for r in result.runs],
            "recorded": recorded_json(result)}


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _size(option: str, text: str) -> int:
    value = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = value[-1:] if value[-1:] in _SIZE_UNITS else ""
    number = value[: len(value) - len(unit)].replace("_", "").replace(",", "")
    if not number.isdigit() or int(number) <= 0:
        fail(f"{option} must be a positive number of bytes (e.g. 1000000, 64M, 2G), got {text!r}")
    return int(number) * _SIZE_UNITS[unit]


def set_limits(max_line_bytes: str | None, max_input_bytes: str | None, max_messages: int | None) -> None:
    """Apply `--max-line-bytes`, `--max-input-bytes`, `--max-messages` to every read of this command."""
    from dataclasses import replace

    from ctxsim._support.fileio import Limits, set_input_limits

    limits = Limits()  # this command's own: nothing carries over from an earlier one in this process
    if max_line_bytes is not None:
        limits = replace(limits, max_line_bytes=_size("--max-line-bytes", max_line_bytes))
    if max_input_bytes is not None:
        limits = replace(limits, max_input_bytes=_size("--max-input-bytes", max_input_bytes))
    if max_messages is not None:
        if max_messages <= 0:
            fail(f"--max-messages must be positive, got {max_messages}")
        limits = replace(limits, max_messages=max_messages)
    set_input_limits(limits)
