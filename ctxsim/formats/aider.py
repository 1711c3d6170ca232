"""`aider`: Aider's chat history (`.aider.chat.history.md` in the repository root), Markdown.

What the reader maps: each `# aider chat started at YYYY-MM-DD HH:MM:SS` begins a session (that
local time, with no zone, read as UTC, is the only time in the file); the banner's
`> Model: NAME with ... edit format` (or `> Main model: ...`) is its model. Lines starting
`#### ` are the user's input (consecutive ones one message; aider's own commands such as
`/add` are not sent and are skipped, `/ask`, `/code`, `/architect` keep their text). Other
plain lines are the assistant's reply. Blockquoted `> ` lines are aider's output to the user
(banners, "Applied edit", commit messages): not messages, except the token report.

Usage: after each model call aider logs
`> Tokens: 12k sent, 2.1k cache write, 8.2k cache hit, 170 received. Cost: $0.02 message, $0.15 session.`
The counts are rounded (`format_tokens`: exact below 1,000, then one decimal of thousands below
10k, then whole thousands): each count is read as its shown value, the usage marked
`estimated` with each field's rounding (`rounding_tokens`: half a unit of the last digit shown),
and never compared exactly. "sent" is the whole prompt (aider adds litellm's prompt tokens, the
cache included); a report whose cache counts exceed "sent" kept them apart and they are added.
The message cost is the request's recorded cost, the last session cost the session's total.
A reply with no token report (usage not shown) is a request without usage.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import IO, Any

from ctxsim.errors import TraceError
from ctxsim.formats import FormatInfo, register
from ctxsim.formats._session import SessionBuilder, frozen
from ctxsim.formats._source import Source
from ctxsim.formats._usage import split_model
from ctxsim.model import Message, Session, Usage, format_ts, parse_ts

NAME = "aider"
HEADER = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})\s*$")
MODEL = re.compile(r"^> (?:Main )?[Mm]odel: (\S+)")
TOKENS = re.compile(r"^> Tokens: (.+?)\.(?: Cost: (.*))?$")
COUNT = re.compile(r"^([\d,]+(?:\.\d+)?)(k?) (sent|received|cache write|cache hit)$")
COST = re.compile(r"\$([\d.]+) message(?:, \$([\d.]+) session)?")
SENT_COMMANDS = ("/ask", "/code", "/architect", "/context")

ABOUT = {
    "reads": "Aider's Markdown chat history: prompts (#### lines), replies, and its rounded token reports",
    "location": ".aider.chat.history.md in the repository root (--chat-history-file)",
    "records": "each session's start time and model; the user's prompts and the assistant's replies; per "
               "request a rounded token report (sent, cache write, cache hit, received) and the message and "
               "session cost",
    "cannot_know": "exact token counts (rounded to 2-3 significant digits: shown as a range); the files, repo map "
                   "and system prompt aider sends (not in the history); the reflected messages it sends after a "
                   "failed edit; times other than the session start (local time, no zone)",
    "checked": "Aider's .aider.chat.history.md (fixtures written from its documented format)",
}


def _count(text: str) -> tuple[int, int]:
    """A rounded count as aider prints it ('1.6k', '12k', '2,345', '170') and its rounding (tokens)."""
    m = re.fullmatch(r"([\d,]+)(?:\.(\d+))?(k?)", text)
    if m is None:
        raise ValueError(text)
    whole, frac, k = m.group(1).replace(",", ""), m.group(2) or "", m.group(3)
    value = Decimal(f"{whole}.{frac}" if frac else whole)
    if not k:
        return int(value), 0
    unit = Decimal(1000) / (Decimal(10) ** len(frac))
    return int(value * 1000), int(unit / 2)


def _money(text: str | None) -> str | None:
    if not text:
        return None
    try:
        return format(Decimal(text.rstrip(".")), "f")
    except InvalidOperation:
        return None


def _report(line: str) -> tuple[Usage, str | None, str | None] | None:
    m = TOKENS.match(line.strip())
    if m is None:
        return None
    counts: dict[str, tuple[int, int]] = {}
    for part in m.group(1).split(", "):
        c = COUNT.match(part.strip())
        if c is None:
            continue
        try:
            counts[c.group(3)] = _count(c.group(1) + c.group(2))
        except ValueError:
            continue
    if "sent" not in counts and "received" not in counts:
        return None
    sent, sent_r = counts.get("sent", (0, 0))
    write, write_r = counts.get("cache write", (0, 0))
    hit, hit_r = counts.get("cache hit", (0, 0))
    out, out_r = counts.get("received", (0, 0))
    extra: dict[str, Any] = {"estimated": True, "rounding_tokens": {
        "input_tokens": sent_r, "cache_write_tokens": write_r, "cache_read_tokens": hit_r, "output_tokens": out_r}}
    if hit + write > sent:
        sent += hit + write
        extra["rounding_tokens"]["input_tokens"] = sent_r + hit_r + write_r
        extra["cache_kept_apart"] = True
    cost = session = None
    if m.group(2):
        c = COST.search(m.group(2))
        if c is not None:
            cost, session = _money(c.group(1)), _money(c.group(2))
    if cost is not None:
        extra["cost_usd"] = cost
    return Usage(sent, hit, write, 0, out, extra=frozen(extra)), cost, session


class _Session:
    def __init__(self, n: int, stem: str, ts: str | None, line: int) -> None:
        self.builder = SessionBuilder(f"{stem}" if n == 1 else f"{stem}/{n}", source=NAME, ts=ts)
        self.ts = ts
        self.line = line
        self.model: str | None = None
        self.user: list[str] = []
        self.reply: list[str] = []
        self.session_cost: str | None = None
        self.requests = 0

    def flush_user(self) -> None:
        if self.user:
            self.builder.add(Message("user", "\n".join(self.user).strip()))
            self.user = []

    def flush_reply(self, usage: Usage | None) -> None:
        text = "\n".join(self.reply).strip()
        self.reply = []
        if text or usage is not None:
            self.builder.add(Message("assistant", text, usage=usage, model=self.model))
            self.requests += 1


def parse(stream: IO[bytes], source: Source) -> list[Session]:
    raw = stream.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TraceError(source.path, raw[:exc.start].count(b"\n") + 1, f"invalid UTF-8 at byte {exc.start}") from None
    stem = source.path.rsplit("/", 1)[-1].lstrip(".").split(".", 1)[0] or NAME
    sessions: list[_Session] = []
    current: _Session | None = None
    commands = 0
    reports = 0

    def finish(s: _Session | None) -> None:
        if s is None:
            return
        s.flush_user()
        s.flush_reply(None)

    for number, line in enumerate(text.splitlines(), start=1):
        header = HEADER.match(line)
        if header:
            finish(current)
            try:
                ts = format_ts(parse_ts(header.group(1).replace(" ", "T") + "Z"))
            except (ValueError, OverflowError):
                ts = None
            current = _Session(len(sessions) + 1, stem, ts, number)
            sessions.append(current)
            continue
        if current is None:
            if not line.strip():
                continue
            current = _Session(1, stem, None, number)  # a history whose header was cut off
            sessions.append(current)
        if line.startswith("#### ") or line == "####":
            body = line[5:]
            if current.reply:
                current.flush_reply(None)
            stripped = body.strip()
            if stripped.startswith("/"):
                word, _, rest = stripped.partition(" ")
                if word in SENT_COMMANDS and rest.strip():
                    current.user.append(rest)
                else:
                    commands += 1
                continue
            current.user.append(body)
            continue
        if line.startswith(">"):
            model = MODEL.match(line)
            if model and current.model is None:
                provider, name = split_model(model.group(1))
                current.model = name
                current.builder.header["model"] = name
                current.builder.header["provider"] = provider
                continue
            report = _report(line)
            if report is not None:
                usage, _, session_cost = report
                current.flush_user()
                current.flush_reply(usage)
                reports += 1
                if session_cost is not None:
                    current.session_cost = session_cost
            continue
        if current.user and line.strip() == "":
            current.flush_user()
            continue
        if current.user:
            current.flush_user()
        if current.reply or line.strip():
            current.reply.append(line)
    finish(current)
    out = []
    for s in sessions:
        if s.session_cost is not None:
            s.builder.extra["recorded_totals"] = {"cost_usd": s.session_cost, "requests": s.requests}
        if s.builder.messages:
            out.append(s.builder.build())
    if reports:
        source.note(f"{reports} rounded token report(s): usage is estimated (aider prints 2-3 significant digits); "
                    "each field's rounding is in the usage's rounding_tokens")
    if commands:
        source.note(f"skipped {commands} aider command(s) (/add, /run ...) not sent to the model")
    source.note("the session start is local time with no zone, read as UTC; aider records no other times")
    return out


def sniff(head: bytes) -> str | None:
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    for line in text.splitlines()[:50]:
        if HEADER.match(line):
            return None
    if text.lstrip().startswith("#### ") and "> Tokens:" in text:
        return None
    return "no '# aider chat started at ...' line in the first lines"


register(FormatInfo(name=NAME, description="Aider chat history Markdown (.aider.chat.history.md)",
                    sniff=sniff, module=__name__, parse=parse))
