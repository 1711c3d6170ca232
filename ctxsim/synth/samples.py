"""The shipped sample traces, as recipes: `traces/` in a checkout holds their output byte for byte
(`traces/regenerate.sh`, checked by tests/test_samples.py), and an installed ctxsim that has no checkout
beside it makes them again on first use, in the user's cache folder, so `ctxsim replay` with no trace
works after `pip install ctxsim` as it does in a checkout.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxsim.errors import CtxsimError


@dataclass(frozen=True)
class Sample:
    profile: str
    turns: int
    seed: int
    billing: dict[str, Any] | None = field(default=None)  # {}: usage recorded with the default billing


SAMPLES: dict[str, Sample] = {
    "billing-session.jsonl": Sample("coding", 60, 0, {}),
    "long-session.jsonl": Sample("coding", 300, 7, None),
}


def sample_text(name: str) -> bytes:
    """The sample's bytes, made from its recipe (what `ctxsim synth ... -o NAME` writes)."""
    from ctxsim.formats import native
    from ctxsim.synth import synthesize

    recipe = SAMPLES[name]
    out = io.StringIO()
    native.write(synthesize(recipe.profile, turns=recipe.turns, seed=recipe.seed, billing=recipe.billing), out)
    return out.getvalue().encode("utf-8")


def cache_folder() -> Path:
    """`$XDG_CACHE_HOME/ctxsim/samples/VERSION` (else `~/.cache/...`): read at call time, so tests can move it."""
    from ctxsim import __version__

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ctxsim" / "samples" / __version__


def sample_path(name: str, checkout: Path | None) -> Path:
    """The sample in the checkout's `traces/` when there is one, else made once into the cache folder."""
    if checkout is not None and (checkout / name).is_file():
        return checkout / name
    target = cache_folder() / name
    if target.is_file():
        return target
    from ctxsim._support.fileio import atomic_write

    data = sample_text(name)
    try:
        with atomic_write(target, "wb") as out:
            out.write(data)
    except CtxsimError as exc:
        raise CtxsimError(f"no TRACE given, and the sample {name} could not be written to the cache ({exc}); "
                          "pass a trace file") from None
    return target

