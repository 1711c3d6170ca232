"""ctxsim as a Python library, for notebooks and scripts: `ctxsim.replay`, `ctxsim.compare`, `ctxsim.load_trace`.

    >>> import ctxsim
    >>> result = ctxsim.compare("traces/billing-session.jsonl", ["clear", "compact"])
    >>> result.to_pandas()[["policy", "cost_usd", "peak_context_tokens"]]

The same engine as the command line: the same options (keyword arguments named like the command-line
flags), the same run artefact (`Result.save` writes what `-o run.json` writes), the same numbers.
`to_pandas` gives money twice: as a float column for plotting (`cost_usd`) and as the exact decimal
string beside it (`cost_usd_exact`), since pandas cannot plot `Decimal` objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from ctxsim.model import Trace
    from ctxsim.replay.run import RunResult

from ctxsim.replay.defaults import COMPARE_POLICIES as DEFAULT_COMPARE  # the command line's list too

TABLES = ("runs", "requests", "events")


def _specs(policies: str | Iterable[str]) -> list[str]:
    """A spec, a comma-separated list of specs, or an iterable of either: never split into letters."""
    from ctxsim.policies.spec import split_list

    given = [policies] if isinstance(policies, str) else list(policies)
    specs = [spec for text in given for spec in split_list(str(text))]
    if not specs:
        from ctxsim.errors import CtxsimError

        raise CtxsimError(f"no policy named in {policies!r}")
    return specs


@dataclass(frozen=True)
class Result:
    """A replay's or a compare's outcome: the run artefact, and tables of it as pandas frames."""

    run: RunResult

    @property
    def manifest(self) -> dict[str, Any]:
        """What was replayed and how: trace, digest, policies with their parameters, prices, calibration."""
        return self.run.manifest

    @property
    def policies(self) -> list[str]:
        """The runs' labels, in order (the `policy` column of every table)."""
        from ctxsim.reports._common import labels

        return list(labels(self.run))

    def totals(self, policy: str | None = None) -> dict[str, Any]:
        """One run's totals as a dict (Decimal money), by label; the first run's when `policy` is None."""
        names = self.policies
        index = 0 if policy is None else names.index(policy) if policy in names else -1
        if index < 0:
            from ctxsim.errors import CtxsimError, did_you_mean

            raise CtxsimError(f"no run {policy!r}{did_you_mean(str(policy), names)}; runs: {', '.join(names)}")
        out = dict(self.run.runs[index].totals.to_json())
        return {k: Decimal(v) if k.endswith("_usd") and isinstance(v, str) else v for k, v in out.items()}

    def to_pandas(self, table: str = "runs") -> pd.DataFrame:
        """`runs` (one row a policy, with the recorded bill when the trace has one), `requests` (one row per
        request per policy) or `events`. Money columns are floats; `<name>_exact` beside each holds the
        exact decimal string."""
        from ctxsim.reports._frames import frame

        data: pd.DataFrame = frame(self.run, table).copy()
        for column in [c for c in data.columns if str(c).endswith("_usd")]:
            exact = data[column].map(lambda v: None if v is None or v != v else str(v))
            data[column] = data[column].map(lambda v: float(v) if isinstance(v, (Decimal, int, float, str))
                                            and v == v else float("nan")).astype("float64")
            data.insert(list(data.columns).index(column) + 1, f"{column}_exact", exact)
        return data

    def save(self, path: str | Path, force: bool = False) -> None:
        """Write the run artefact (`run.json`), exactly as `ctxsim replay -o` does."""
        from ctxsim._support.fileio import check_output

        check_output(str(path), [], force)
        self.run.save(path, force)

    def __repr__(self) -> str:
        trace = (self.manifest.get("trace") or {}).get("name")
        return f"<ctxsim.Result {trace}: {', '.join(self.policies)}>"


def sample_trace() -> str:
    """The path of the shipped sample trace (the one `ctxsim compare` replays with no path), from any folder."""
    from ctxsim.cli import default_trace

    return default_trace()


def load_trace(path: str | Path | Sequence[str | Path], fmt: str | None = None,
               skip_bad_lines: bool = False) -> Trace:
    """Read one trace (a file, a folder searched recursively, `-`, `.gz`) or several into the canonical model."""
    from ctxsim.formats import read_traces

    paths = [str(path)] if isinstance(path, (str, Path)) else [str(p) for p in path]
    return read_traces(paths, fmt, skip_bad_lines)


def load_run(path: str | Path) -> Result:
    """A saved run artefact (`run.json` of `replay -o` or `compare -o`)."""
    from ctxsim.replay.run import RunResult

    return Result(RunResult.load(path))


def replay(trace: str | Path, policies: str | Iterable[str] = "none", *, fmt: str | None = None,
           calibrate: bool = True, **options: Any) -> Result:
    """Replay `trace` under each policy spec (`"clear:trigger=30000,keep=3"`, a preset, `"a+b"`, a TOML file).

    `options` are the command line's replay options: provider, model, tokenizer, cache, cache_ttl, window,
    reserve, framing (a `ctxsim.tokens.counting.Framing`), skip_bad_lines, jobs. Calibrated by default, as the
    command line is, where the trace recorded usage.
    """
    from ctxsim.replay.api import Options, replay_trace

    return Result(replay_trace(str(trace), _specs(policies), fmt=fmt,
                               options=Options(calibrate=calibrate, **options)))


def compare(trace: str | Path, policies: str | Iterable[str] = DEFAULT_COMPARE, *, providers: Sequence[str] = (),
            fmt: str | None = None, calibrate: bool = True, **options: Any) -> Result:
    """`replay` with `none` always first (the baseline every saving is against), optionally priced under
    several providers (`"openai:gpt-4.1"`); recall loss metered unless `loss=False`, as the command line does."""
    from ctxsim.replay.api import Options, replay_trace

    options.setdefault("loss", True)
    specs = _specs(policies)
    if not any(s.split(":", 1)[0] == "none" for s in specs):
        specs.insert(0, "none")
    return Result(replay_trace(str(trace), specs, fmt=fmt, providers=list(providers),
                               options=Options(calibrate=calibrate, **options)))
