"""Trace-format readers: one module per format, each registering itself here.

The module file uses underscores, the registry and `--format` name hyphens
(`claude_code.py` registers `claude-code`). Third-party readers come through the
`ctxsim.formats` entry-point group.

This module holds the registry, `FormatInfo` and detection. Every reader has one
shape: `parse(stream, source)` gets an open input and its `Source`, and returns
the file's sessions; `read_traces` does the rest for every format alike. What the
readers share lives in private modules, by concern:

- `_input`: `read_traces` (files, directories searched recursively, `-` for
  stdin, gzip by magic bytes), `FileReport`, `--max-messages`;
- `_source`: `Source`, one input being read: JSONL lines decoded, malformed
  ones collected (an error listing them, or skipped with `skip_bad_lines`),
  wrong shapes turned into `file:line: what is wrong`;
- `_node`: `Node`, typed access to a decoded JSON value that fails with the
  file, line and JSON path of the bad field, and the line locator;
- `_session`: `SessionBuilder` (keeps the native format's invariants, so every
  reader's output converts to native JSONL and reads back) and `Conversation`;
- `_content`: the text of content blocks and image sizes; `_usage`: usage
  normalisation and model names; `_sniff`: what a file's first bytes are.

The names below `__all__` are re-exported here for code outside this package.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from ctxsim.errors import CtxsimError
from ctxsim.model import Session, Trace
from ctxsim.registry import Registry


@dataclass(frozen=True)
class FormatInfo:
    name: str
    description: str
    # Returns None when the first bytes look like this format, else the reason they don't.
    sniff: Callable[[bytes], str | None]
    module: str
    # Reads a path; for a reader without `parse` (every reader here has `parse`).
    read: Callable[[str], Trace] | None = None
    # Reads an open input (its `Source` carries the options: skip_bad_lines ...) into the file's sessions.
    parse: Callable[[IO[bytes], Source], list[Session]] | None = None
    # Joins the sessions of several files of this format (e.g. a subagent file to its parent).
    link: Callable[[list[Session]], list[Session]] | None = None
    # Read strictly (the pinned native format): a lone UTF-16 surrogate makes its line malformed and the
    # reading keeps no notes; foreign formats are read liberally (`Source`).
    strict: bool = False
    # A file of this format that another file beside it reads too (Cline's api_conversation_history.json, read
    # with its ui_messages.json): that other file's path, so a directory scan that finds both reads it once.
    covered_by: Callable[[str], str | None] | None = None

    def load(self, path: str) -> Trace:
        return self.read(path) if self.read is not None else read_traces([path], self.name)


_REGISTRY: Registry[FormatInfo] = Registry("format", __name__, "ctxsim.formats")


def register(info: FormatInfo) -> None:
    _REGISTRY.add(info.name, info, info.module)


def formats() -> dict[str, FormatInfo]:
    return _REGISTRY.all()


SNIFF_BYTES = 65536
BOM = b"\xef\xbb\xbf"


def detect(path: str, head: bytes) -> FormatInfo:
    """The format whose sniffer accepts these first bytes; else an error naming each refusal."""
    head = head.removeprefix(BOM)
    reasons = []
    for info in formats().values():
        try:
            why = info.sniff(head)
        except Exception as exc:  # a third-party sniffer must not crash detection
            why = f"its sniffer failed ({type(exc).__name__})"
        if why is None:
            return info
        reasons.append(f"{info.name}: {why}")
    raise CtxsimError(f"{path}: unknown trace format; tried " + "; ".join(reasons))


# Re-exported (after the definitions above, which the private modules import).
from ctxsim.errors import TraceError  # noqa: E402
from ctxsim.formats._content import (  # noqa: E402
    IMAGE_FALLBACK_TOKENS,
    anthropic_image_tokens,
    image_size,
    image_tokens,
    openai_image_tokens,
    text_of,
)
from ctxsim.formats._input import FileReport, read_trace, read_traces, scan_directory  # noqa: E402
from ctxsim.formats._node import Node, kind_of, locate  # noqa: E402
from ctxsim.formats._session import Conversation, SessionBuilder, arguments_of, frozen, openai_tool_calls  # noqa: E402
from ctxsim.formats._sniff import head_text, sniff_json_head, sniff_json_object_text, sniff_jsonl_records  # noqa: E402
from ctxsim.formats._source import Source  # noqa: E402
from ctxsim.formats._usage import any_usage, split_model, usage_anthropic, usage_native, usage_openai  # noqa: E402
from ctxsim.model import ToolCall, format_ts, parse_ts  # noqa: E402

# one sorted list (RUF022): the registry and reading (detect, formats, register, read_trace(s), scan_directory,
# FileReport, FormatInfo) and the reader toolkit for readers outside this package (the rest)
__all__ = [
    "BOM", "IMAGE_FALLBACK_TOKENS", "SNIFF_BYTES", "Conversation", "FileReport", "FormatInfo", "Node",
    "SessionBuilder", "Source", "ToolCall", "TraceError", "anthropic_image_tokens", "any_usage", "arguments_of",
    "detect", "format_ts", "formats", "frozen", "head_text", "image_size", "image_tokens", "kind_of", "locate",
    "openai_image_tokens", "openai_tool_calls", "parse_ts", "read_trace", "read_traces", "register",
    "scan_directory", "sniff_json_head", "sniff_json_object_text", "sniff_jsonl_records", "split_model", "text_of",
    "usage_anthropic", "usage_native", "usage_openai",
]
