"""Shell completion values (typer `autocompletion=`): what `--by` takes, the policy and preset names. Imported
only when the shell asks, so `ctxsim --help` stays light."""

from __future__ import annotations


def by_keys(incomplete: str) -> list[str]:
    """`inspect --by`: day, week, month, session, project, model, block."""
    from ctxsim.analysis.accounting import KEYS

    return [k for k in KEYS if k.startswith(incomplete)]


def policy_names(incomplete: str) -> list[str]:
    """A policy or preset name, after the commas of a list already typed (`clear,com` -> `clear,compact`)."""
    from ctxsim.policies import policies
    from ctxsim.presets import presets

    done, _, last = incomplete.rpartition(",")
    head = f"{done}," if done else ""
    names = sorted({*policies(), *presets()})
    return [head + name for name in names if name.startswith(last)]
