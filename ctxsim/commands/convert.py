"""`ctxsim convert`: any supported trace format to the native JSONL."""

from __future__ import annotations

from typing import Annotated

import typer

from ctxsim.cli import app, fail, guarded
from ctxsim.commands._found import OptionalTracesArg, SourceOpt, inputs
from ctxsim.commands._options import ForceOpt, MaxInputBytesOpt, MaxLineBytesOpt, MaxMessagesOpt, set_limits
from ctxsim.commands.inspect import FormatOpt, SkipOpt, read_inputs

TRACE_KINDS = {"jsonl": "the trace in the native format"}  # what convert and synth write


@app.command("convert")
@guarded
def convert_command(
    traces: OptionalTracesArg = None,
    output: Annotated[str | None, typer.Option("-o", "--output", help="The native JSONL file to write: "
                                                  "FILE.jsonl (or no suffix), '-' for stdout; any other suffix "
                                                  "is refused.")] = None,
    fmt: FormatOpt = None,
    source: SourceOpt = None,
    skip_bad_lines: SkipOpt = False,
    force: ForceOpt = False,
    max_line_bytes: MaxLineBytesOpt = None,
    max_input_bytes: MaxInputBytesOpt = None,
    max_messages: MaxMessagesOpt = None,
) -> None:
    """Convert traces to ctxsim's native JSONL; replaying the result equals replaying the original. With no
    path: the sessions found where the agents keep them (--source narrows it).

    The output is the trace itself, every text in it as recorded (not redacted): the one command exempt
    from keeping trace content out of its output.
    """
    import sys

    from ctxsim._support.fileio import atomic_write, check_output
    from ctxsim.formats import native

    if output is None:
        fail("missing -o OUT.jsonl (or -o - for stdout)")
    set_limits(max_line_bytes, max_input_bytes, max_messages)
    if output != "-":
        from ctxsim.commands._output import decide

        decide(output, "convert", TRACE_KINDS)  # the suffix first: before discovery reads any folder
    traces, fmt = inputs(traces, source, fmt)
    if output != "-":  # refused before reading, not after
        check_output(output, traces, force)
    trace, report = read_inputs(traces, fmt, skip_bad_lines)
    if output == "-":
        native.write(trace, sys.stdout)
        return
    with atomic_write(output, force=force) as out:
        native.write(trace, out)
    messages = sum(len(s.messages) for s in trace.sessions)
    requests = sum(s.requests for s in trace.sessions)
    formats = ", ".join(sorted({f.format for f in report}))
    typer.echo(f"wrote {output}: {len(trace.sessions)} session(s), {messages:,} messages, {requests:,} requests "
               f"(from {formats})", err=True)
