"""`ctxsim statusline`: one line for Claude Code's status line, from the JSON it passes on stdin.

Claude Code runs the status line command after every change to the conversation, so the transcript is
read incrementally: the state kept in the cache folder (`$XDG_CACHE_HOME/ctxsim/statusline/`, one file
per transcript) holds how far each file was read and the running totals, and a call reads only the
lines appended since. A file that is no longer the same (another device or inode, shorter than what was
read, another first 4 KiB) is read again from its start; a state that cannot be read is rebuilt. With
nothing appended the line is printed from the state alone, without importing the price data.

What is counted is what `ctxsim inspect` counts for the same files (tests/test_statusline.py checks it):
each API response once (its lines share `requestId` and `message.id`: the last line's usage, the largest
output count; a response logged again later is a copy), synthetic error messages left out, priced with
ctxsim's price data. Read: the transcript and its subagents' files (`<session>/subagents/*.jsonl`).
Nothing of the conversation's text is kept or printed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import IO, Any

STATE_FORMAT = 1
HEAD_BYTES = 4096
DEFAULT_WINDOW_TOKENS = 200_000
_TOTALS = ("requests", "input_tokens", "cache_read_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens",
           "output_tokens")


def _state_folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ctxsim", "statusline")


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return 0
    return int(value)


def usage_of(usage: dict[str, Any]) -> list[int]:
    """[prompt (inclusive), cache read, 5-minute write, 1-hour write, output], as the reader counts them."""
    uncached, read = _count(usage, "input_tokens"), _count(usage, "cache_read_input_tokens")
    written = _count(usage, "cache_creation_input_tokens")
    split = usage.get("cache_creation")
    w5 = _count(split, "ephemeral_5m_input_tokens") if isinstance(split, dict) else None
    w1 = _count(split, "ephemeral_1h_input_tokens") if isinstance(split, dict) else None
    if not isinstance(split, dict) or ("ephemeral_5m_input_tokens" not in split
                                       and "ephemeral_1h_input_tokens" not in split):
        w5, w1 = written, 0
    w5, w1 = w5 or 0, w1 or 0
    if w5 + w1 != written and written:
        w5 = max(written - w1, 0)
    return [uncached + read + w5 + w1, read, w5, w1, _count(usage, "output_tokens")]


class Session:
    """The running accounting of one transcript (and its subagents' files), as kept between calls."""

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        data = data or {}
        self.files: dict[str, list[Any]] = data.get("files", {})  # path -> [dev, ino, offset, head digest]
        self.seen: set[str] = set(data.get("seen", []))  # every response key met (hashed)
        self.open: dict[str, list[Any]] = data.get("open", {})  # stream -> [key, usage, model, ts]
        self.totals: dict[str, int] = data.get("totals", dict.fromkeys(_TOTALS, 0))
        self.cost_usd: str = data.get("cost_usd", "0")
        self.unpriced: int = data.get("unpriced", 0)
        self.context_tokens: int = data.get("context_tokens", 0)
        self.model: str | None = data.get("model")

    def to_json(self) -> dict[str, Any]:
        return {"format": STATE_FORMAT, "files": self.files, "seen": sorted(self.seen), "open": self.open,
                "totals": self.totals, "cost_usd": self.cost_usd, "unpriced": self.unpriced,
                "context_tokens": self.context_tokens, "model": self.model}

    # ------------------------------------------------------------ reading

    def read(self, path: str, main: bool) -> bool:
        """Read what was appended to `path` since the last call; False when nothing was."""
        try:
            handle = open(path, "rb")  # noqa: SIM115 (closed by the `with` below; a missing file is no error)
        except OSError:
            return False
        with handle:
            st = os.fstat(handle.fileno())
            known = self.files.get(path)
            offset = 0
            if known is not None:
                same = known[:2] == [st.st_dev, st.st_ino] and known[2] <= st.st_size and \
                    _head(handle, known[2]) == known[3]
                if not same:
                    raise _Rebuild
                offset = known[2]
            if offset == st.st_size:
                return False
            handle.seek(offset)
            chunk = handle.read()
            end = chunk.rfind(b"\n") + 1  # a line still being written waits for the next call
            for line in chunk[:end].splitlines():
                self._line(line, path, main)
            self.files[path] = [st.st_dev, st.st_ino, offset + end, _head(handle, offset + end)]
        return end > 0

    def _line(self, raw: bytes, path: str, main: bool) -> None:
        if b'"assistant"' not in raw:
            return
        try:
            node = json.loads(raw)
        except ValueError:
            return  # a malformed line: `inspect --skip-bad-lines` skips it too
        if not isinstance(node, dict) or node.get("type") != "assistant":
            return
        message = node.get("message")
        if not isinstance(message, dict):
            return
        model = message.get("model") if isinstance(message.get("model"), str) else None
        if model == "<synthetic>" or node.get("isApiErrorMessage") is True:
            return
        rid, mid = node.get("requestId"), message.get("id")
        rid, mid = (rid if isinstance(rid, str) else ""), (mid if isinstance(mid, str) else "")
        key = hashlib.blake2b(f"{rid}\0{mid}".encode(), digest_size=8).hexdigest() if rid or mid else None
        sidechain = node.get("isSidechain") is True
        stream = f"{path}\0{node.get('agentId') or 'sidechain'}" if sidechain else f"{path}\0"
        raw_usage = message.get("usage")
        usage = usage_of(raw_usage) if isinstance(raw_usage, dict) else None
        current = self.open.get(stream)
        if key is not None and current is not None and current[0] == key:
            if usage is not None:
                if current[1] is not None:
                    usage[4] = max(usage[4], current[1][4])
                current[1] = usage
            return
        if key is not None and key in self.seen:
            return  # a copy of a response already counted
        if current is not None:
            self._close(current)
        timestamp = node.get("timestamp")
        self.open[stream] = [key, usage, model, timestamp if isinstance(timestamp, str) else None, main and
                             not sidechain]
        if key is not None:
            self.seen.add(key)

    def _close(self, response: list[Any]) -> None:
        """Add a finished response to the totals."""
        _, usage, model, ts, main = response
        self.totals["requests"] += 1
        if model:
            self.model = model if main else self.model or model
        if usage is None:
            return
        for name, value in zip(_TOTALS[1:], usage, strict=True):
            self.totals[name] += value
        if main:
            self.context_tokens = usage[0]  # the last main request's prompt: the context it held
        cost = _price(model, usage, ts)
        if cost is None:
            self.unpriced += 1
        else:
            from decimal import Decimal

            self.cost_usd = str(Decimal(self.cost_usd) + cost)

    def shown(self) -> Session:
        """The totals with the responses still open counted in (a copy: they may still grow)."""
        view = Session(json.loads(json.dumps(self.to_json())))
        for response in view.open.values():
            view._close(response)
        view.open = {}
        return view


def _head(handle: IO[bytes], read: int) -> str:
    """A hash of the file's first bytes, as far as they were read (at most HEAD_BYTES)."""
    handle.seek(0)
    return hashlib.blake2b(handle.read(min(read, HEAD_BYTES)), digest_size=8).hexdigest()


class _Rebuild(Exception):
    """A file read before is not the same file any more: read everything again."""


_pricers: dict[str, Any] = {}


def _price(model: str | None, usage: list[int], ts: str | None) -> Any:
    from ctxsim.errors import CtxsimError
    from ctxsim.model import parse_ts
    from ctxsim.pricing.prices import Bill, Pricer

    if not model:
        return None
    if model not in _pricers:
        try:
            _pricers[model] = Pricer("anthropic", model)
        except CtxsimError:
            _pricers[model] = None
    pricer = _pricers[model]
    if pricer is None:
        return None
    try:
        ts_s = parse_ts(ts) if ts else None
    except ValueError:
        ts_s = None
    return pricer.cost(Bill(*usage), ts_s)


# ---------------------------------------------------------------- the command


def transcript_files(transcript: str, session_id: str | None) -> list[str]:
    """The transcript, then its subagents' files (Claude Code 2.1: `<session>/subagents/agent-*.jsonl`)."""
    stem = os.path.splitext(transcript)[0]
    folder = os.path.join(os.path.dirname(transcript), session_id, "subagents") if session_id else \
        os.path.join(stem, "subagents")
    try:
        agents = sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".jsonl"))
    except OSError:
        agents = []
    return [transcript, *agents]


def account(transcript: str, session_id: str | None, folder: str | None = None) -> Session:
    """The transcript's accounting so far, read incrementally with the state kept in `folder`."""
    folder = folder or _state_folder()
    from ctxsim import __version__

    name = hashlib.blake2b(f"{__version__}\0{os.path.abspath(transcript)}".encode(), digest_size=16).hexdigest()
    state_path = os.path.join(folder, name + ".json")
    shown: Session | None = None
    try:
        with open(state_path, encoding="utf-8") as handle:
            data = json.load(handle)
        session = Session(data["state"] if data.get("format") == STATE_FORMAT else None)
        shown = Session(data["shown"]) if data.get("format") == STATE_FORMAT else None
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        session = Session()
    files = transcript_files(transcript, session_id)
    try:
        changed = [session.read(path, path == transcript) for path in files]
    except (_Rebuild, KeyError, TypeError, ValueError, IndexError, AttributeError):
        session = Session()
        changed = [session.read(path, path == transcript) for path in files]
    if shown is not None and not any(changed):
        return shown  # nothing new: the line as the last call showed it, nothing priced again
    shown = session.shown()
    _write(state_path, {"format": STATE_FORMAT, "state": session.to_json(), "shown": shown.to_json()})
    return shown


def _write(path: str, data: dict[str, Any]) -> None:
    import tempfile

    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".state-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, separators=(",", ":"))
        os.replace(temporary, path)
    except OSError:
        pass  # the next call reads from the start


def _tokens(n: int) -> str:
    return f"{n / 1_000_000:.1f}M" if n >= 1_000_000 else f"{n / 1000:.0f}k" if n >= 1000 else str(n)


def line(stdin: dict[str, Any], session: Session) -> str:
    from decimal import Decimal

    t = session.totals
    window = DEFAULT_WINDOW_TOKENS
    given = stdin.get("context_window")
    if isinstance(given, dict) and isinstance(given.get("context_window_size"), int) \
            and given["context_window_size"] > 0:
        window = given["context_window_size"]
    hit = t["cache_read_tokens"] / t["input_tokens"] if t["input_tokens"] else 0.0
    cost = Decimal(session.cost_usd).quantize(Decimal("0.01"))
    unpriced = f" ({session.unpriced} unpriced)" if session.unpriced else ""
    used = session.context_tokens / window * 100
    return (f"${cost}{unpriced} | context {_tokens(session.context_tokens)}/{_tokens(window)} ({used:.0f}%) | "
            f"cache hit {hit * 100:.0f}% | {t['requests']} requests")


def main(stdin: IO[str], stdout: IO[str]) -> int:
    """Read Claude Code's JSON, print one line; a problem is one line too (the status line shows it)."""
    try:
        data = json.load(stdin)
    except ValueError as exc:
        stdout.write(f"ctxsim: stdin is not JSON ({getattr(exc, 'msg', exc)})\n")
        return 2
    transcript = data.get("transcript_path") if isinstance(data, dict) else None
    if not isinstance(transcript, str) or not transcript:
        stdout.write("ctxsim: no transcript_path in the status line JSON\n")
        return 2
    if not os.path.isfile(transcript):
        stdout.write("ctxsim: no transcript yet\n")
        return 0
    session_id = data.get("session_id") if isinstance(data.get("session_id"), str) else None
    stdout.write(line(data, account(transcript, session_id)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.stdin, sys.stdout))
