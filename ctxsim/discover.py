"""Discovery: the session files the agents keep on this machine, found without a path.

Each reader module says where its product keeps sessions in a `DISCOVERY` dict beside its
`ABOUT` text (one source of truth for the folders):

- `folders`: default folders, `~` being the home folder;
- `files`: the glob of session files under a folder;
- `env` / `env_suffix` (optional): an environment variable naming the product's config folder
  (a comma-separated list is allowed); when set it replaces the defaults, and the sessions are
  under `<value>/<env_suffix>` (Claude Code's CLAUDE_CONFIG_DIR, Codex's CODEX_HOME).

The home folder and the variables are read from the environment at call time (`environ`,
default os.environ), so tests point HOME at a temporary folder.
"""

from __future__ import annotations

import glob
import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Place:
    folder: str  # as looked at (expanded)
    why: str  # "default" or "$VAR"
    exists: bool
    files: list[str] = field(default_factory=list)


@dataclass
class Found:
    source: str  # the format name
    places: list[Place]

    @property
    def files(self) -> list[str]:
        seen: set[str] = set()
        out = []
        for place in self.places:
            for f in place.files:
                real = os.path.realpath(f)
                if real not in seen:
                    seen.add(real)
                    out.append(f)
        return out


def discovery_specs() -> dict[str, Mapping[str, Any]]:
    """Every registered format whose module has a DISCOVERY dict (sorted by name)."""
    from ctxsim.formats import formats

    out = {}
    for name, info in formats().items():
        spec = getattr(importlib.import_module(info.module), "DISCOVERY", None)
        if spec:
            out[name] = spec
    return out


def _home(environ: Mapping[str, str]) -> str:
    home = environ.get("HOME") or environ.get("USERPROFILE")
    return home or os.path.expanduser("~")


def _expand(path: str, home: str) -> str:
    if path == "~" or path.startswith("~/"):
        return home + path[1:]
    return path


def folders_of(spec: Mapping[str, Any], environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(folder, why) pairs for one source, in the order they are searched."""
    home = _home(environ)
    var = spec.get("env")
    if var and environ.get(var, "").strip():
        suffix = spec.get("env_suffix") or ""
        return [(os.path.join(_expand(p.strip(), home), suffix) if suffix else _expand(p.strip(), home), f"${var}")
                for p in environ[var].split(",") if p.strip()]
    return [(_expand(p, home), "default") for p in spec.get("folders", ())]


def discover(source: str | None = None, environ: Mapping[str, str] | None = None) -> list[Found]:
    """Where each source (or only `source`) keeps its sessions, and the files found there (sorted)."""
    from ctxsim.errors import CtxsimError

    env = os.environ if environ is None else environ
    specs = discovery_specs()
    if source is not None and source not in specs:
        raise CtxsimError(f"--source must be one of {', '.join(specs)} (the formats whose products keep sessions "
                          f"in known folders), got {source!r}")
    out = []
    for name, spec in specs.items():
        if source is not None and name != source:
            continue
        places = []
        for folder, why in folders_of(spec, env):
            exists = os.path.isdir(folder)
            files = sorted(f for f in glob.glob(os.path.join(glob.escape(folder), spec["files"]), recursive=True)
                           if os.path.isfile(f)) if exists else []
            places.append(Place(folder, why, exists, files))
        out.append(Found(name, places))
    return out


def discovered_files(source: str | None = None, environ: Mapping[str, str] | None = None
                     ) -> list[tuple[str, str]]:
    """(path, format) of every session file found, sources in name order; an error when none is."""
    from ctxsim.errors import CtxsimError

    found = discover(source, environ)
    out = [(f, entry.source) for entry in found for f in entry.files]
    if not out:
        looked = "; ".join(p.folder for entry in found for p in entry.places)
        raise CtxsimError(f"no trace given and no sessions found where the agents keep them (looked in: {looked}); "
                          "give a path, or see `ctxsim formats list`")
    return out
