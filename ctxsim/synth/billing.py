"""Recorded usage for a synthetic trace: what a provider would have billed for each of its requests.

A real log does not show everything a request carried, and the provider does not count with
o200k. So that the calibration (ctxsim/analysis/calibrate.py) has something real to recover, the billed
prompt of every request is made the way a provider makes it, from what the log does not show:

- a hidden prefix of `hidden_tokens` (the product's system prompt and tool schemas, absent from the log);
- the provider's tokenizer against o200k: every counted token, the visible system prompt and tools
  included, billed at `token_scale` (Claude's tokenizer is about 1.0-1.4x o200k, see
  calibration_priors.toml);
- `message_tokens` of framing per message (role markers, tool_use / tool_result ids), before scaling;
- cache reads and writes by ctxsim's own Anthropic cache model (ctxsim/caching/anthropic.py: the
  breakpoints Claude Code places, 5-minute TTL) over the trace's own timestamps, so its long
  pauses find the cache cold;
- occasional cold-cache misses (`cold_rate` per request after a session's first): the provider
  read nothing and wrote the whole prefix again, with nothing in the log to tell why.

The output of each response is billed at its counted size under the same scale and framing.
Everything is deterministic: `random.Random(seed)` draws the misses; o200k counts exactly.

Because the visible system prompt and tools are scaled too while the calibration counts them
unscaled, a calibration of such a trace finds a hidden prefix of about
`hidden_tokens + (token_scale - 1) x (visible system + tools)`; `expected_prefix` says how much.
"""

from __future__ import annotations

import random
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from ctxsim.model import Trace, Usage
from ctxsim.synth import option_number

DEFAULTS: dict[str, Any] = {
    "hidden_tokens": 8_000,  # system prompt and tool schemas the log does not show
    "token_scale": 1.1,  # billed tokens per o200k token
    "message_tokens": 16,  # framing per message, counted before scaling
    "cold_rate": 0.03,  # chance per request of a provider cache miss
}


def check(options: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        from ctxsim.errors import ParameterError

        raise ParameterError(f"synth billing: unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                             f"(known: {', '.join(DEFAULTS)})")
    merged = {**DEFAULTS, **options}
    out = {
        "hidden_tokens": int(option_number("billing", "hidden_tokens", merged["hidden_tokens"], high=1_000_000)),
        "token_scale": option_number("billing", "token_scale", merged["token_scale"], low=0.5, high=3.0),
        "message_tokens": int(option_number("billing", "message_tokens", merged["message_tokens"], high=1_000)),
        "cold_rate": option_number("billing", "cold_rate", merged["cold_rate"], high=1.0),
    }
    return out


def _visible_fixed(trace: Trace) -> list[int]:
    from ctxsim.tokens import TokenCounter, get_tokenizer
    from ctxsim.tokens.counting import Framing, MessageSizer

    sizer = MessageSizer(TokenCounter(get_tokenizer("o200k_base")), Framing(message_tokens=0))
    return [sizer.system(s) + sizer.tools(s) for s in trace.sessions]


def expected_prefix(trace: Trace, hidden_tokens: int, token_scale: float) -> list[int]:
    """Per session, the hidden prefix a calibration of the billed trace should find (see the module doc)."""
    return [round(hidden_tokens + (token_scale - 1) * fixed) for fixed in _visible_fixed(trace)]


def record(trace: Trace, seed: int = 0, *, hidden_tokens: int, token_scale: float, message_tokens: int,
           cold_rate: float) -> Trace:
    """`trace` with every response's `usage` as the provider would have billed it (module doc)."""
    from ctxsim.policies import parse_policy
    from ctxsim.replay.engine import Replayer, Setup
    from ctxsim.tokens import TokenCounter, get_tokenizer
    from ctxsim.tokens.counting import Framing, MessageSizer

    counter = TokenCounter(get_tokenizer("o200k_base"))
    fixed = _visible_fixed(trace)
    # what the provider counts of the visible system prompt and tools: scaled like everything else
    billed_view = replace(trace, sessions=tuple(
        replace(s, system_tokens=round(f * token_scale), tools_tokens=0) for s, f in zip(trace.sessions, fixed,
                                                                                         strict=True)))
    framing = Framing(message_tokens=message_tokens, tool_call_tokens=0, tool_result_tokens=0, scale=token_scale)
    setup = Setup(hidden_prefix_tokens=hidden_tokens, cache="anthropic", provider_rules=True)
    run = Replayer(billed_view, MessageSizer(counter, framing), setup).run(parse_policy("none"))
    rows = iter(r for r in run.rows if r.kind == "request")
    rng = random.Random(f"billing-{seed}")
    sessions = []
    for session in trace.sessions:
        messages = list(session.messages)
        first = True
        for i, m in enumerate(messages):
            if m.role != "assistant":
                continue
            row = next(rows)
            read, write = row.cache_read_tokens, row.cache_write_tokens
            miss = not first and read and rng.random() < cold_rate
            if miss:  # the provider's cache missed: it read nothing and wrote the prefix again
                read, write = 0, read + write
            first = False
            usage = Usage(input_tokens=row.input_tokens, cache_read_tokens=read, cache_write_tokens=write,
                          cache_write_1h_tokens=row.cache_write_1h_tokens, output_tokens=row.output_tokens)
            messages[i] = replace(m, usage=usage)
        extra = dict(session.extra)
        generator = dict(extra.get("generator") or {})
        generator["billing"] = {"hidden_tokens": hidden_tokens, "token_scale": token_scale,
                                "message_tokens": message_tokens, "cold_rate": cold_rate,
                                "cache": "anthropic", "tokenizer": "o200k_base"}
        extra["generator"] = generator
        sessions.append(replace(session, messages=tuple(messages), extra=MappingProxyType(extra)))
    return replace(trace, sessions=tuple(sessions))
