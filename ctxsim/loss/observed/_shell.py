"""What a shell command fetches: a file read (`cat`, `sed -n`, `head`, `nl` ...), a search (`rg`, `grep`), or
else the command itself (run again identically). Shared by every product whose agent runs shell commands."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from typing import Any

from ctxsim.loss.observed import Target

SHELLS = frozenset(["bash", "sh", "zsh", "fish", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash", "/usr/bin/zsh"])
READERS = frozenset(["cat", "nl", "bat", "less", "more", "head", "tail", "sed", "awk", "wc"])
SLICERS = frozenset(["head", "tail", "sed", "awk"])
SEARCHERS = frozenset(["rg", "grep", "egrep", "ag", "ack", "git grep"])
_SPACE = re.compile(r"\s+")
_PIPE = re.compile(r"\|\||&&|;|\|")


def command_text(value: Any) -> str | None:
    """A command as one string: a list argv (`["zsh", "-lc", "cat x"]`: the script a shell is given) or a string."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, Sequence) and value and all(isinstance(x, str) for x in value):
        argv = list(value)
        if argv[0] in SHELLS and len(argv) >= 3 and argv[1] in ("-c", "-lc", "-ic", "-l"):
            return argv[-1].strip() or None
        return shlex.join(argv)
    return None


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment)
    except ValueError:
        return segment.split()


def _cd_stripped(text: str) -> str:
    """`cd DIR && rest` -> `rest` (the directory is the context of the command, not what it fetches)."""
    parts = re.split(r"\s*&&\s*", text, maxsplit=1)
    if len(parts) == 2 and parts[0].startswith("cd "):
        return parts[1]
    return text


def shell_target(value: Any) -> Target | None:
    """What a shell command fetches (None: not a command)."""
    text = command_text(value)
    if text is None:
        return None
    text = _cd_stripped(text)
    segments = [s.strip() for s in _PIPE.split(text) if s.strip()]
    if not segments:
        return None
    words = _words(segments[0])
    if words:
        name = words[0].rsplit("/", 1)[-1]
        files = [w for w in words[1:] if not w.startswith("-") and ("/" in w or "." in w) and not _is_range(w)]
        sliced = name in SLICERS or any(_words(s)[:1] and _words(s)[0] in SLICERS for s in segments[1:])
        if name in READERS and len(files) == 1:
            return Target("file", _path(files[0]), sliced)
        if name in SEARCHERS or (name == "git" and words[1:2] == ["grep"]):
            return Target("search", _SPACE.sub(" ", segments[0]))
    return Target("command", _SPACE.sub(" ", text))


def _is_range(word: str) -> bool:
    return bool(re.fullmatch(r"[\d,$]+p?|\d+(,\d+)?p", word))


def _path(path: str) -> str:
    return path.removeprefix("./")


__all__ = ["command_text", "shell_target"]
