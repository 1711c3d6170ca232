"""How many tokens a message, the system prompt and the tool schemas take.

A message costs its texts (content, thinking, each tool call's name and JSON
arguments), counted by the tokenizer, plus framing: the role markers and
separators a chat format adds. Providers do not document the framing exactly;
the defaults follow seed 000 (4 tokens a message) and are configurable.

File content and the rest: a tokenizer other than the model's own (o200k_base against Claude's)
is off by a ratio that depends on the text: a file's content (source code, a document read
whole) comes closer to o200k_base than shell output, paths, prose and JSON do. With
`Framing.file_weight` != 1 the sizer counts file-content tokens at that weight relative to
the rest, and the scale applies to the sum. A counted text is file content (`is_file_text`)
when it is

1. the output of a file-reading tool (FILE_READ_TOOLS: Claude Code `Read`, Gemini CLI
   `read_file` / `read_many_files`, `view` / `open_file` style tools),
2. the arguments of a call to a file-writing tool (FILE_WRITE_TOOLS: `Write`, `Edit`,
   `MultiEdit`, `write_file`, `replace`, `str_replace_editor`, `apply_patch`, ...): the
   file's new text, or
3. any text of at least FILE_MIN_LINES non-empty lines of which at least half carry a
   line-number gutter (`cat -n`, an editor's view: digits then a tab or `→`), whichever tool
   or message it arrives in (an edit's result snippet, `cat -n` through a shell).

Everything else (thinking, the model's text, shell and search output, JSON) is the rest. Each
distinct text is classified once (memo keyed by content, as counts are).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ctxsim.model import Message, Session
from ctxsim.tokens import TokenCounter


@dataclass(frozen=True)
class Framing:
    """Tokens added around the counted texts."""

    message_tokens: int = 4  # every message: role markers and separators
    tool_call_tokens: int = 4  # each tool call inside an assistant message
    tool_result_tokens: int = 0  # extra on a tool result, beyond message_tokens
    count_tool_result_name: bool = False  # yoagent counts the tool name of a result
    count_call_name: bool = True
    count_call_arguments: bool = True  # seed 000 counts an assistant message's text only
    tool_schema_tokens: int = 8  # each tool definition, beyond its JSON
    scale: float = 1.0  # calibration: billed tokens per counted token (e.g. Claude's tokenizer vs o200k)
    file_weight: float = 1.0  # file-content tokens relative to the rest (see the module text); 1: no classes

    @property
    def unscaled(self) -> bool:
        """Whether every counted token is one token of the message's size (no scale, no class weight): a
        size then adds up piece by piece, which the policies that size texts in pieces rely on."""
        return self.scale == 1.0 and self.file_weight == 1.0


# Tool names (lower case, without separators) whose result is a file's content, or whose call
# arguments carry a file's new content, across the products ctxsim reads.
FILE_READ_TOOLS = frozenset({"read", "readfile", "readmanyfiles", "notebookread", "view", "viewfile", "openfile",
                             "readtextfile"})
FILE_WRITE_TOOLS = frozenset({"write", "edit", "multiedit", "notebookedit", "writefile", "replace", "editfile",
                              "createfile", "strreplaceeditor", "strreplacebasededittool", "applypatch",
                              "fileeditor", "writetofile"})
FILE_MIN_LINES = 3
_GUTTER = re.compile(r"^\s*\d+(?:→|\t)", re.MULTILINE)
_SEPARATORS = str.maketrans("", "", "_-. ")


BASE_FRAMING = Framing(message_tokens=0, tool_call_tokens=0, tool_result_tokens=0)  # counted tokens alone


def tool_key(name: str | None) -> str:
    """A tool name as the class lists hold it: lower case, without `_`, `-`, `.` or spaces."""
    return name.lower().translate(_SEPARATORS) if name else ""


def is_file_text(text: str) -> bool:
    """Rule 3 of the module text: at least FILE_MIN_LINES non-empty lines, half of them behind a line-number
    gutter."""
    if text.count("\n") < FILE_MIN_LINES - 1:
        return False
    lines = sum(1 for line in text.splitlines() if line.strip())
    return lines >= FILE_MIN_LINES and 2 * len(_GUTTER.findall(text)) >= lines


def blocks(message: Message) -> int:
    """Content blocks as Anthropic counts them for the cache lookback."""
    if message.role != "assistant":
        return 1
    n = (1 if message.content else 0) + (1 if message.thinking else 0) + len(message.tool_calls)
    return max(n, 1)


class MessageSizer:
    """Token size of messages, system prompt and tools, with a shared memo."""

    def __init__(self, counter: TokenCounter, framing: Framing | None = None) -> None:
        self.counter = counter
        self.framing = framing or Framing()
        self._file: dict[str, bool] = {"": False}

    def is_file(self, text: str) -> bool:
        """`is_file_text`, memoised per distinct text."""
        known = self._file.get(text)
        if known is None:
            known = self._file[text] = is_file_text(text)
        return known

    def file_tokens(self, message: Message) -> int:
        """Of the message's counted texts, the tokens that are file content (the module text's rules)."""
        count = self.counter.count
        n = 0
        if message.content and ((message.role == "tool" and tool_key(message.name) in FILE_READ_TOOLS)
                                or self.is_file(message.content)):
            n += count(message.content)
        if self.framing.count_call_arguments:
            for call in message.tool_calls:
                if tool_key(call.name) in FILE_WRITE_TOOLS or self.is_file(call.arguments_json):
                    n += count(call.arguments_json)
        return n

    def message(self, message: Message) -> int:
        f = self.framing
        count = self.counter.count
        n = f.message_tokens + count(message.content) + message.extra_tokens
        if message.thinking:
            n += count(message.thinking)
        for call in message.tool_calls:
            n += f.tool_call_tokens
            if f.count_call_arguments:
                n += count(call.arguments_json)
            if f.count_call_name:
                n += count(call.name)
        if message.role == "tool":
            n += f.tool_result_tokens
            if f.count_tool_result_name and message.name:
                n += count(message.name)
        if f.file_weight != 1.0:
            return round((n - (1.0 - f.file_weight) * self.file_tokens(message)) * f.scale)
        if f.scale != 1.0:
            return round(n * f.scale)
        return n

    def system(self, session: Session) -> int:
        if session.system_tokens is not None:
            return session.system_tokens
        if session.system is None:
            return 0
        return self.framing.message_tokens + self.counter.count(session.system)

    def tools(self, session: Session) -> int:
        if session.tools_tokens is not None:
            return session.tools_tokens
        return sum(
            self.framing.tool_schema_tokens
            + self.counter.count(json.dumps(dict(tool), ensure_ascii=False, separators=(",", ":")))
            for tool in session.tools
        )

    def prime(self, session: Session) -> None:
        """Count every distinct text of the session in one batch."""
        texts: list[str] = []
        for message in session.messages:
            texts.append(message.content)
            if message.thinking:
                texts.append(message.thinking)
            for call in message.tool_calls:
                texts.append(call.name)
                texts.append(call.arguments_json)
            if message.role == "tool" and message.name:
                texts.append(message.name)
        if session.system:
            texts.append(session.system)
        self.counter.prime(texts)
