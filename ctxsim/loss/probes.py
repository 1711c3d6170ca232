"""Probes: facts that must survive, checked in the managed context at chosen requests and at the end.

A probe is a string (found as written) or `re:PATTERN` (a Python regular expression, searched).
`--probe TEXT` (repeatable) or `--probes FILE.toml`:

    [[probe]]
    name = "rounding decision"     # optional: how the tables name it (else its text)
    text = "ROUND_HALF_EVEN"       # or: pattern = "ROUND_HALF_\\w+"

Checked, for each policy, at the requests `--probe-at N,M` names (before the request is sent, after
the policy's edits) and always at the end of the run: present when the system prompt or any live
message (content or tool-call arguments; a stub or summary included) holds it (seed 000's "facts
still in the managed context", generalised).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxsim.errors import CtxsimError


@dataclass(frozen=True)
class Probe:
    name: str
    text: str | None = None
    pattern: re.Pattern[str] | None = None

    def found(self, texts: list[str]) -> bool:
        if self.pattern is not None:
            search = self.pattern.search
            return any(search(t) for t in texts if t)
        needle = self.text or ""
        return any(needle in t for t in texts if t)


def probe(spec: str, where: str = "--probe", name: str | None = None) -> Probe:
    if spec.startswith("re:"):
        try:
            return Probe(name or spec, pattern=re.compile(spec[3:]))
        except re.error as exc:
            raise CtxsimError(f"{where}: {spec!r} is not a regular expression ({exc})") from None
    if not spec:
        raise CtxsimError(f"{where}: an empty probe")
    return Probe(name or spec, text=spec)


@dataclass(frozen=True)
class ProbeSet:
    probes: tuple[Probe, ...]
    at: frozenset[int] = frozenset()  # request numbers to check at (besides the end)

    def state(self) -> ProbeState:
        return ProbeState(self)


@dataclass
class ProbeState:
    """One run's checks."""

    set: ProbeSet
    found: dict[str, list[bool]] = field(default_factory=dict)  # checkpoint ("request N" or "end") -> per probe

    def check(self, number: int | None, texts: list[str]) -> None:
        key = "end" if number is None else str(number)
        self.found[key] = [p.found(texts) for p in self.set.probes]

    def results(self) -> list[dict[str, Any]]:
        out = []
        for i, p in enumerate(self.set.probes):
            at = {key: values[i] for key, values in self.found.items() if key != "end"}
            out.append({"probe": p.name, "at": at, "end": self.found.get("end", [False] * (i + 1))[i]})
        return out


def load_file(path: str) -> list[Probe]:
    import tomllib

    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CtxsimError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CtxsimError(f"{path}: cannot read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise CtxsimError(f"{path}: not TOML ({exc})") from None
    entries = data.get("probe")
    if not isinstance(entries, list) or not entries:
        raise CtxsimError(f"{path}: no [[probe]] tables (each with text = \"...\" or pattern = \"...\")")
    out = []
    for n, entry in enumerate(entries, 1):
        where = f"{path}: probe {n}"
        if not isinstance(entry, dict) or ("text" in entry) == ("pattern" in entry):
            raise CtxsimError(f"{where}: give text = \"...\" or pattern = \"...\" (one of them)")
        name = entry.get("name")
        if name is not None and not isinstance(name, str):
            raise CtxsimError(f"{where}: name must be a string")
        value = entry.get("text", entry.get("pattern"))
        if not isinstance(value, str) or not value:
            raise CtxsimError(f"{where}: text / pattern must be a non-empty string")
        out.append(probe(("re:" + value) if "pattern" in entry else value, where, name))
    return out


def probe_set(probes: list[str] | None, files: list[str] | None, at: str | None) -> ProbeSet | None:
    """The probes of the command line (None when there are none)."""
    items = [probe(p) for p in probes or []]
    for path in files or []:
        items.extend(load_file(path))
    numbers: set[int] = set()
    for raw in (at or "").split(","):
        part = raw.strip()
        if not part:
            continue
        if not part.isdigit() or int(part) < 1:
            raise CtxsimError(f"--probe-at: {part!r} is not a request number (1, 2, ...)")
        numbers.add(int(part))
    if not items:
        if numbers:
            raise CtxsimError("--probe-at names requests to check, but no --probe or --probes gives a probe")
        return None
    names = [p.name for p in items]
    if len(set(names)) != len(names):
        raise CtxsimError("two probes have the same name: give each a distinct one")
    return ProbeSet(tuple(items), frozenset(numbers))


__all__ = ["Probe", "ProbeSet", "load_file", "probe", "probe_set"]
