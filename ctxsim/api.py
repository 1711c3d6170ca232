"""The library entry points the CLI calls."""

from __future__ import annotations

from collections.abc import Sequence

from ctxsim.counting import Framing, MessageSizer
from ctxsim.engine import DEFAULT_RESERVE, Replayer, Setup
from ctxsim.formats import read_trace
from ctxsim.policies import parse_policy
from ctxsim.run import RunResult, manifest
from ctxsim.tokens import TokenCounter, get_tokenizer


def replay_trace(
    path: str,
    policy_specs: Sequence[str],
    *,
    provider: str | None = None,
    model: str | None = None,
    tokenizer: str = "o200k_base",
    cache: str | None = None,
    cache_ttl: str | None = None,
    window: int | None = None,
    reserve: int = DEFAULT_RESERVE,
    fmt: str | None = None,
    framing: Framing | None = None,
) -> RunResult:
    """Read `path`, replay it under every policy spec, return the run artefact."""
    policies = [parse_policy(spec) for spec in policy_specs]  # bad specs fail before any work
    trace = read_trace(path, fmt)
    sizer = MessageSizer(TokenCounter(get_tokenizer(tokenizer)), framing)
    setup = Setup(provider=provider, model=model, window=window, output_reserve=reserve, cache=cache,
                  cache_ttl=cache_ttl)
    replayer = Replayer(trace, sizer, setup)
    runs = []
    for spec, policy in zip(policy_specs, policies, strict=True):
        run = replayer.run(policy)
        run.policy["label"] = spec
        runs.append(run)
    return RunResult(manifest(replayer, path), runs)
