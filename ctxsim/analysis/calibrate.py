"""Calibration: fit how the counted prompt maps to the billed one, on exactly what the replay sends.

A log rarely shows everything a request carried: Claude Code never logs its system prompt and
tool schemas, and Claude's tokenizer is not o200k. Where the trace records real usage, the
recorded prompt of request k of session part s is modelled as

    recorded_k = counted_fixed_s + prefix_s + anchors_k + scale * (text_k + overhead * messages_k)

`text_k` and `messages_k` are what the `none` replay sends (the same engine and meter path, the
provider's rules applied: earlier turns' thinking or reasoning dropped at a new user message, see
ProviderReasoningRule), `counted_fixed_s` the system prompt and tools the log shows, `prefix_s`
the hidden prefix of that session part (system prompt, tool schemas, injected reminders),
`anchors_k` the tokens the log is missing before request k (re-anchoring, below), `scale` the
billed tokens per counted token and `overhead` the framing tokens per message the provider adds.
Where the prior gives ratios by content class (`file_scale` on file content, counting.py's rules, and
`rest_scale` on the rest), the fit is made twice: with one ratio for every text, and with `text_k`
counting file content at `file_weight` = file_scale / rest_scale of the rest's weight (a ratio from
the priors, never fitted: no free parameter more, also for short sessions; `scale` is then the
rest's ratio). The one that reproduces the trace better (no fallback, then the smaller median and
p90 prompt error) is kept and a note says which: a provider whose tokenizer weighs code and prose
alike (a synthetic bill) keeps one ratio. The replay sizes every message the same way
(`framing()` carries the weight). `priors` mode uses the one ratio.

1. `scale` and `overhead` are one robust (Huber) least-squares fit over the requests, with one
   intercept per segment (a session part, split at its anchors). The fit is bounded by priors per
   tokenizer and provider (calibration_priors.toml, with sources and dates): a pair outside the
   bounds, or too few requests for two slopes (a session of 2-3 requests), fits ONE slope with the
   other from the prior (`fit+prior overhead`, `fit+prior scale`: the one inside its bounds with the
   smaller residual); nothing inside the bounds falls back to the priors. The source says which.
2. The hidden prefix is taken per session part from that part's own requests (`fit`: the median
   residual of its first segment; `priors`: its first request), never larger than what its first
   request leaves unexplained, so never larger than that request's whole prompt. The per-product
   values in the priors are used only for sessions that recorded no usage.
3. Re-anchoring: where the log misses something (lines a reader skipped, a resumed process, the
   product's own compaction or microcompaction inside a session part, a recorded prompt that fell
   though nothing in the log was removed, a recorded prompt that grew by far more than the log's new
   messages explain: redacted text, encrypted items, attachments a product adds), the replay is
   re-anchored there and the tokens reported as missing, not folded into the fitted parameters.
   An unexplained growth is one over GROWTH_TOLERANCE_TOKENS, GROWTH_SHARE of the prompt and the
   growth the log explains itself at the prior's scale, from the previous request or over the
   segment so far (a log holding a fraction of every message drifts slowly): thresholds about the
   log, wide enough that a tokenizer's error on a large new message never crosses them. The
   anchored request starts a segment, so the fit sees only the differences inside segments.
   An anchor is applied as an `extra_tokens` adjustment (marked `extra["anchor_tokens"]`) on the
   last message that arrives before that request, or, for an unexplained growth, spread over the
   messages appended since the previous request in proportion to their counted size (the log holds
   less of each than was sent), so every later request carries it, the cache sees it as part of
   those messages and a policy that drops them saves it; a negative anchor (content the log shows
   but the provider did not get) makes that message lighter.
4. Output counts: a response whose recorded `output_tokens` is a streaming placeholder (the reader
   flags it: `Usage.extra["output_placeholder"]`) is billed at an estimate, the counted size of
   its logged content, and flagged `Usage.extra["output_estimated"]`.
5. Cost range: the log cannot tell whether a part's first request read a prefix cached by another
   session, whether requests outside the log kept the cache warm across an idle gap (Claude Code
   sends such requests), or, on OpenAI-style caches, whether the cache ran into the previous
   response. `low` assumes all three (the shared prefix warm at every part's first request,
   nothing expired, reads up to the previous prompt plus its response); `high` is the replay as
   modelled plus, at each request where the recorded read fell short of the replay's within the
   cache lifetime with nothing in the log changed, the rewrite the provider billed.

Use: `cal = calibration(trace, "o200k_base")` (always returns one; `fit` returns None with fewer
than 3 recorded requests), then replay `cal.apply(trace)` with `cal.framing()`, `cal.setup(...)`
and `cal.policy(policy, provider, model)` (the provider's rules). `calibrated(...)` does all of it.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import cache
from importlib.resources import files
from statistics import median
from typing import Any

from ctxsim.analysis import cache_anchor
from ctxsim.analysis.growth import GROWTH
from ctxsim.caching.anthropic import FITTED_TTL_KEY
from ctxsim.caching.recorded import FACTS_KEY
from ctxsim.history import Item
from ctxsim.model import Message, Session, Trace, Usage
from ctxsim.policies import NoParams, Policy, Stages, parse_policy
from ctxsim.policies.base import Edit, Replace, View
from ctxsim.pricing.prices import Bill, Pricer
from ctxsim.replay.engine import Replayer, Setup, resolve
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import BASE_FRAMING, Framing, MessageSizer

MIN_REQUESTS = 3
MODES = ("fit", "priors")
PLACEHOLDER_MAX_OUTPUT = 9  # Claude Code's streaming placeholders: 1-9 output tokens, no stop reason
PRODUCT_EDITS = ("compaction", "microcompact", "history_rewritten")  # events that re-anchor inside a part
DROP_TOLERANCE_TOKENS = 256  # a recorded prompt that fell by more than this (and 2 %) beyond what the log removed
# A recorded prompt that grew by more than the log's new messages explain: content the log does not hold
# (redacted text, encrypted items, attachments the product adds). Re-anchored where the unexplained growth
# is over GROWTH_TOLERANCE_TOKENS, over GROWTH_SHARE of the prompt and over the growth the log explains
# itself (at the prior's scale): the last keeps a tokenizer's error on a large new message (a scale off by
# up to 2x) out of it, so it is about the log, not about fit noise.
GROWTH_TOLERANCE_TOKENS = 512
GROWTH_SHARE = 0.02

# Anthropic models that keep the thinking of earlier turns (extended-thinking docs; the clear_thinking
# policy cites the same list); older ones strip it from the prompt. The rule itself decides by family and
# version (caching.anthropic.keeps_thinking, caching/data.toml): these are examples of it, kept for callers.
KEEPS_THINKING = ("claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-7", "claude-sonnet-4-6", "claude-sonnet-4-7")
TAG = "provider_dropped_reasoning"


# ---------------------------------------------------------------- provider rules


class ProviderReasoningRule:
    """The provider, not the agent, drops reasoning sent back from turns before the latest user message.

    OpenAI reasoning models ignore the reasoning items of earlier turns (the Responses API
    reasoning guide: reasoning is carried within a turn, discarded at the next user message);
    Claude models before Opus 4.5 / Sonnet 4.6 strip earlier turns' thinking blocks. A log of
    the agent still holds them; under `none` the replay would keep counting them. This rule
    drops them as the provider does: an assistant message before the latest user message loses
    its thinking text and its hidden reasoning tokens (an anchor it carries is kept). The
    calibration fits on the replay with this rule; `with_provider_rules` puts it in front of
    any policy so that `replay` and `compare` send what `validate` checks.

    The rule follows each request's own model (the recorded response's, else its session's, else
    the model it was made for): a Claude Code trace mixes a main model that keeps its thinking with
    subagents that do not. It keeps no positions between requests: it observes every change to the
    history (whichever stage made it) and holds the live items that carry reasoning, so a later stage
    that drops messages, or a history that grows back, never makes it skip one.
    """

    name = "provider-rules"
    params = NoParams()

    def __init__(self, provider: str, model: str, models: Sequence[str] = ()) -> None:
        """`models`: every model the trace's requests use; the rule is active when any of them drops. Without
        them (the engine builds it from the trace's first model) an Anthropic rule is active and decides per
        request: another session may use a model that drops what the first one keeps."""
        self.provider = provider
        self.model = model
        self.openai = provider == "openai"
        self.anthropic = provider == "anthropic" and (not models or any(_strips_thinking(m) for m in (model, *models)))
        self._models: list[str] = []  # the session's request models, in order (foresee)
        self._follow: bool | None = None  # follow the recorded models (set at the first session)
        self._request = 0  # requests decided in this session
        self._carriers: dict[int, Item] = {}  # live items that carry reasoning, not dropped yet (by id)
        self._last_user: Item | None = None  # the live user message furthest down the history
        self._rescan = False  # the latest user message was removed: find it again
        self.observing = True  # the engine tells it of changes (foresee: only where a response carries reasoning)
        self.dropped_tokens = 0

    @property
    def active(self) -> bool:
        return self.openai or self.anthropic

    def drops_for(self, model: str | None) -> bool:
        """Whether a request to `model` drops earlier turns' reasoning (None: the rule's own model)."""
        if self.openai:
            return True
        return self.provider == "anthropic" and _strips_thinking(model or self.model)

    def _carries(self, message: Message) -> bool:
        if message.role != "assistant":
            return False
        if self.openai and message.extra.get("reasoning_tokens") and message.extra_tokens != _anchor(message):
            return True
        return self.provider == "anthropic" and bool(message.thinking)

    def foresee(self, session: Session) -> None:
        """The models the session's requests are sent to (the provider applies its rule per request).

        The recorded models are followed when the rule's own model is the first session's (the trace's
        own); a rule made for another model (a forced `--model`) applies that model to every request.
        A session with no response carrying reasoning leaves the rule out of its observers."""
        self.observing = any(self._carries(m) for m in session.messages)
        fallback = session.model or next((m.model for m in session.messages if m.model), None) or self.model
        if self._follow is None:
            own, mine = fallback.lower(), self.model.lower()
            self._follow = own.startswith(mine) or mine.startswith(own)
        if not self._follow:
            self._models = []
            return
        self._models = [m.model or fallback for m in session.messages if m.role == "assistant"]

    def start(self) -> None:
        self._request = 0
        self._carriers = {}
        self._last_user = None
        self._rescan = False

    def observe(self, removed: Sequence[Item], added: Sequence[Item]) -> None:
        for item in removed:
            self._carriers.pop(id(item), None)
            if item is self._last_user:
                self._rescan = True
        for item in added:
            role = item.message.role
            if role == "user":
                if self._last_user is None or not self._last_user.alive or item.pos > self._last_user.pos:
                    self._last_user = item
            elif role == "assistant" and TAG not in item.tags and self._carries(item.message):
                self._carriers[id(item)] = item

    def decide(self, view: View) -> list[Edit]:
        self._request += 1
        model = self._models[self._request - 1] if self._request <= len(self._models) else None
        if not self._carriers or not self.drops_for(model):
            return []
        items = view.items
        if self._rescan or (self._last_user is not None and not self._last_user.alive):
            self._rescan = False
            self._last_user = next((it for it in reversed(items) if it.message.role == "user"), None)
        if self._last_user is None:
            return []
        boundary = self._last_user.pos
        changes = []
        for item in sorted((it for it in self._carriers.values() if it.alive and it.pos < boundary),
                           key=lambda it: it.pos):
            message = item.message
            lighter = replace(message, thinking=None, extra_tokens=_anchor(message))
            tokens = view.size(lighter)
            self.dropped_tokens += item.tokens - tokens
            changes.append(Replace(item, lighter, tokens, tags=item.tags | {TAG}, cleared=item.cleared,
                                   pinned=item.pinned))
        if not changes:
            return []
        return [Edit("provider_drops_reasoning", tuple(changes),
                     f"the provider dropped the reasoning of {len(changes)} earlier-turn responses")]


def _strips_thinking(model: str) -> bool:
    from ctxsim.caching.anthropic import keeps_thinking  # by family and version (caching/data.toml)

    return not keeps_thinking(model)


def _anchor(message: Message) -> int:
    return int(message.extra.get("anchor_tokens", 0) or 0)


def with_provider_rules(policy: Policy, provider: str, model: str, models: Sequence[str] = (),
                        ) -> tuple[Policy, ProviderReasoningRule | None]:
    """`policy` with the provider's reasoning rule run first (a fresh rule: it keeps per-run state);
    `models`: every model the trace uses (the rule is there when any of them drops reasoning)."""
    rule = ProviderReasoningRule(provider, model, models)
    if not rule.active:
        return policy, None
    stages = tuple(getattr(policy, "stages", None) or (policy,))
    if policy.name == "none" and len(stages) == 1:
        return Stages("none", (rule,)), rule
    return Stages(policy.name, (rule, *stages), getattr(policy, "params", NoParams())), rule


# ---------------------------------------------------------------- priors


@dataclass(frozen=True)
class TokenPrior:
    tokenizer: str
    provider: str
    scale: float
    scale_low: float
    scale_high: float
    message_tokens: int
    message_tokens_low: int
    message_tokens_high: int
    source: str
    date: str
    # file content (counting.py's rules) against the rest: its tokens weigh file_weight of the rest's, so
    # `scale` is the rest's ratio and scale x file_weight the file content's (1: one ratio for every text)
    file_weight: float = 1.0
    # the ratios by content class where the priors know them, (file content, the rest): the fit tries them
    # beside the one ratio and keeps what fits the trace better (`by_class`)
    classes: tuple[float, float] | None = None

    def by_class(self) -> TokenPrior:
        """This prior with its ratios by content class: the rest's as `scale`, file content's as its weight."""
        assert self.classes is not None
        file_scale, rest_scale = self.classes
        return replace(self, scale=rest_scale, file_weight=round(file_scale / rest_scale, 4), classes=None)

    def to_json(self) -> dict[str, Any]:
        return {"tokenizer": self.tokenizer, "provider": self.provider, "scale": self.scale,
                "scale_bounds": [self.scale_low, self.scale_high], "message_tokens": self.message_tokens,
                "message_tokens_bounds": [self.message_tokens_low, self.message_tokens_high],
                "file_weight": self.file_weight, "classes": list(self.classes) if self.classes else None,
                "source": self.source, "date": self.date}


@cache
def _priors_data() -> dict[str, Any]:
    return tomllib.loads((files("ctxsim.analysis") / "calibration_priors.toml").read_text(encoding="utf-8"))


def token_prior(tokenizer: str, provider: str) -> TokenPrior:
    """The prior for counting with `tokenizer` what `provider` bills: exact, then (tokenizer, *), then (*, *)."""
    entries = _priors_data()["token"]
    for want in ((tokenizer, provider), (tokenizer, "*"), ("*", "*")):
        for e in entries:
            if (e["tokenizer"], e["provider"]) == want:
                classes = ((float(e["file_scale"]), float(e["rest_scale"])) if "file_scale" in e and "rest_scale" in e
                           else None)
                return TokenPrior(**{k: e[k] for k in TokenPrior.__dataclass_fields__
                                     if k not in ("file_weight", "classes")}, classes=classes)
    raise AssertionError("calibration_priors.toml has no (*, *) token prior")


def prefix_prior(product: str | None, group: str) -> tuple[int, str]:
    """A product's hidden prefix for a session with no recorded usage: (tokens, source)."""
    entries = _priors_data()["prefix"]
    for want in ((product, group), (product, "main"), ("*", "*")):
        for e in entries:
            if (e["product"], e["group"]) == want:
                return int(e["tokens"]), f"{e['source']} ({e['date']})"
    return 0, "no prior"


# ---------------------------------------------------------------- the replay the fit sees


def group_of(session: Session) -> str:
    """Sessions that share a hidden prefix: the main agent's, or a subagent's (per source)."""
    kind = "subagent" if session.extra.get("agent_id") or session.extra.get("sidechain") else "main"
    return f"{session.source}:{kind}" if session.source else kind


def _kind(session: Session) -> str:
    return group_of(session).rsplit(":", 1)[-1]


@dataclass(frozen=True)
class Request:
    """One replayed request of a session and what it recorded (when it did)."""

    session: str
    index: int  # 1-based request number in its session
    position: int  # the assistant message's position in session.messages
    prompt_tokens: int  # as the replay sends it
    messages: int
    recorded: Message  # the assistant message (its usage is what was billed)
    row: Any  # the meter's Row


def replay_none(trace: Trace, counter: TokenCounter, framing: Framing | None, setup: Setup | None,
                ) -> tuple[Replayer, Any, ProviderReasoningRule | None, list[list[Request]]]:
    """The `none` replay with the provider's rules: (replayer, run, rule or None, requests per session)."""
    replayer = Replayer(trace, MessageSizer(counter, framing), setup or Setup())
    resolved = replayer.resolved
    policy, rule = with_provider_rules(parse_policy("none"), resolved.provider, resolved.model_id, resolved.models)
    run = replayer.run(policy)
    rows = iter(r for r in run.rows if r.kind == "request")
    out: list[list[Request]] = []
    for session in trace.sessions:
        index = 0
        mine = []
        for position, message in enumerate(session.messages):
            if message.role != "assistant":
                continue
            index += 1
            row = next(rows)
            mine.append(Request(session.id, index, position, row.input_tokens, row.messages, message, row))
        out.append(mine)
    return replayer, run, rule, out


def _billed(request: Request) -> bool:
    usage = request.recorded.usage
    return usage is not None and usage.input_tokens > 0


def _billed_usage(requests: Sequence[Request]) -> Iterator[tuple[Request, Usage]]:
    """The requests that recorded their usage, each with it."""
    for r in requests:
        usage = r.recorded.usage
        if usage is not None and usage.input_tokens > 0:
            yield r, usage


# ---------------------------------------------------------------- result


@dataclass(frozen=True)
class Anchor:
    """Tokens the log is missing before a request: applied on the message at `position` of `session`."""

    session: str
    request: int  # 1-based request index in the session
    position: int  # the message that carries the adjustment
    tokens: int  # billed tokens (negative: the log holds content the provider did not get)
    reason: str
    # where the tokens are spread instead, in proportion to each message's counted size: the messages
    # appended since the previous request (an unexplained growth: the log holds less of them than was sent)
    spread: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"session": self.session, "request": self.request, "tokens": self.tokens,
                               "reason": self.reason}
        if self.spread:
            out["messages"] = len(self.spread)
        return out

    @staticmethod
    def shares(tokens: int, sizes: Sequence[int]) -> list[int]:
        """`tokens` over messages of these counted sizes, in proportion (largest remainder first)."""
        weights = [max(1, n) for n in sizes]
        total = sum(weights)
        raw = [tokens * w / total for w in weights]
        out = [math.floor(v) for v in raw]
        left = tokens - sum(out)
        for i in sorted(range(len(raw)), key=lambda i: (out[i] - raw[i], i))[:left]:
            out[i] += 1
        return out


@dataclass(frozen=True)
class Calibration:
    """The fitted values, how they were found, and how good they are; apply with `apply`, `framing`, `setup`."""

    scale: float
    message_tokens: int  # framing per message, in counted tokens
    hidden_prefix_tokens: int  # the smallest session prefix: what Setup carries
    group_prefix_tokens: dict[str, int]  # median session prefix per group (main agent, subagents)
    group_requests: dict[str, int]
    requests_used: int
    requests_excluded: int  # recorded requests that only anchor (the single request of a segment)
    tokenizer: str
    model: str = "prefix per session part + anchors + scale x (text + overhead x messages)"
    notes: tuple[str, ...] = ()
    session_groups: dict[str, str] = field(default_factory=dict)
    mode: str = "fit"  # asked for: fit or priors
    source: str = "fit"  # what scale and overhead came from: fit, fit+prior overhead, priors
    fell_back: bool = False
    fallback_reason: str | None = None
    fitted_scale: float | None = None  # the raw fit, also when rejected
    fitted_message_tokens: float | None = None
    prior: TokenPrior | None = None
    session_prefix_tokens: dict[str, int] = field(default_factory=dict)
    anchors: tuple[Anchor, ...] = ()
    placeholder_outputs: tuple[tuple[str, int], ...] = ()  # (session, request) whose output was estimated
    quality: dict[str, Any] = field(default_factory=dict)  # in-sample errors of the calibrated none replay
    recorded_cost_usd: Decimal | None = None
    cost_usd: Decimal | None = None  # the calibrated none replay, over the requests with usage
    cost_range_usd: tuple[Decimal, Decimal] | None = None
    session_cost_ranges: dict[str, tuple[Decimal, Decimal]] = field(default_factory=dict)
    # what each session part's first request read from a cache warmed before its log starts (recorded):
    # for a cache model that can start warm; the replay today starts cold and the range covers it
    warm_start_tokens: dict[str, int] = field(default_factory=dict)
    # per session part that continues another after a compaction: how much larger its hidden prefix is than
    # the part before's (what the product re-attached, e.g. files re-read, that the log does not show)
    reattached_tokens: dict[str, int] = field(default_factory=dict)
    # per session part whose recorded cache reads stopped inside its hidden prefix at a break (the provider
    # rewrote from there): the stable system layer (tools + system prompt) the reads stopped at. The rest of
    # the hidden prefix is project context the product sends in the messages (Claude Code's layers: system
    # prompt + tools / project context / conversation), so `apply` puts it after the system breakpoint.
    system_layer_tokens: dict[str, int] = field(default_factory=dict)
    context_tokens: dict[str, int] = field(default_factory=dict)  # of each such prefix, what lies past the layer
    # per session part, the requests whose recorded cache read the cache model cannot produce: request number
    # -> (ceiling, floor, fresh, the model's read at a ceiling), replayed as the provider's facts for every
    # policy (analysis/cache_anchor, caching/recorded, caching/transfer)
    cache_facts: dict[str, dict[int, tuple[int | None, ...]]] = field(default_factory=dict)
    cache_facts_moved: dict[str, int] = field(default_factory=dict)  # tokens they moved: read down, up; unwritten
    file_weight: float = 1.0  # the prior's: file-content tokens against the rest (counting.py), not fitted
    # the unexplained growth as a rule (analysis/growth.GrowthModel), carried by `apply` into the requests no bill
    # re-anchored: per session, from `growth_from[id]` (the request after its last billed one; 1: none billed)
    growth_model: Any = None
    growth_from: dict[str, int] = field(default_factory=dict)
    # settings a replay otherwise reads from the whole log, taken from the fitted requests only (validate
    # --predict): per session, the cache TTL its recorded writes show (caching/anthropic FITTED_TTL_KEY), and
    # a cache model ("none": the fitted requests recorded no cache read of an unpriced model)
    fitted_ttl: dict[str, str | None] = field(default_factory=dict)
    cache: str | None = None

    @property
    def missing_tokens(self) -> int:
        """Tokens the log is missing at its anchors (positive anchors; drops are counted apart)."""
        return sum(a.tokens for a in self.anchors if a.tokens > 0)

    @property
    def missing_report(self) -> dict[str, Any]:
        by: dict[str, dict[str, int]] = {}
        for a in self.anchors:
            entry = by.setdefault(a.reason, {"anchors": 0, "tokens": 0})
            entry["anchors"] += 1
            entry["tokens"] += a.tokens
        return {"missing_tokens": self.missing_tokens,
                "dropped_tokens": -sum(a.tokens for a in self.anchors if a.tokens < 0), "by_reason": by,
                "reattached_after_compaction_tokens": sum(self.reattached_tokens.values()),
                "reattached_by_part": dict(self.reattached_tokens),
                "placeholder_outputs": len(self.placeholder_outputs)}

    def framing(self, base: Framing | None = None) -> Framing:
        base = base or Framing()
        return replace(base, message_tokens=self.message_tokens, tool_call_tokens=0, tool_result_tokens=0,
                       scale=round(self.scale, 6), file_weight=self.file_weight)

    def setup(self, base: Setup | None = None) -> Setup:
        base = base or Setup()
        return replace(base, hidden_prefix_tokens=self.base_prefix_tokens, cache=base.cache or self.cache)

    @property
    def base_prefix_tokens(self) -> int:
        """The hidden prefix every session's base carries (Setup): the smallest, less any context moved out."""
        if not self.context_tokens:
            return self.hidden_prefix_tokens
        return min(p - self.context_tokens.get(sid, 0) for sid, p in self.session_prefix_tokens.items())

    def policy(self, policy: Policy, provider: str, model: str) -> Policy:
        """`policy` with the provider's rules in front: what the calibration was fitted on."""
        return with_provider_rules(policy, provider, model)[0]

    def prefix_of(self, session: Session) -> int:
        if session.id in self.session_prefix_tokens:
            return self.session_prefix_tokens[session.id]
        return self.group_prefix_tokens.get(group_of(session), self.hidden_prefix_tokens)

    def apply(self, trace: Trace, counter: TokenCounter | None = None) -> Trace:
        """The trace with each session's prefix (above the smallest) in its system size, the anchors on
        their messages and placeholder output counts replaced by estimates."""
        sizer = MessageSizer(counter or TokenCounter(get_tokenizer(self.tokenizer)), self.framing())
        anchors: dict[tuple[str, int], list[Anchor]] = {}
        for a in self.anchors:
            anchors.setdefault((a.session, a.position), []).append(a)
        placeholders = set(self.placeholder_outputs)
        sessions = []
        changed = False
        floor = self.base_prefix_tokens
        for s in trace.sessions:
            new = s
            moved = self.context_tokens.get(s.id, 0)  # the hidden project context past the system layer
            extra = self.prefix_of(s) - moved - floor
            if extra:
                new = replace(new, system_tokens=sizer.system(s) + extra)
            messages = list(s.messages)
            touched = False
            index = 0
            for i, m in enumerate(messages):
                if m.role == "assistant":
                    index += 1
                    if (s.id, index) in placeholders and m.usage is not None:
                        estimate = max(m.usage.output_tokens, sizer.message(m) - self.message_tokens)
                        usage = replace(m.usage, output_tokens=estimate,
                                        extra={**m.usage.extra, "output_estimated": True,
                                               "output_recorded": m.usage.output_tokens})
                        messages[i] = replace(m, usage=usage)
                        touched = True
                for a in anchors.get((s.id, i), ()):
                    total = round(a.tokens / self.scale) if self.scale else a.tokens
                    if a.spread:
                        shares = zip(a.spread, a.shares(total, [sizer.message(s.messages[j]) for j in a.spread]),
                                     strict=True)
                    else:
                        shares = zip((i,), (total,), strict=True)
                    for j, counted in shares:
                        now = messages[j]  # as estimated above, and as each earlier anchor left it
                        if counted:
                            messages[j] = replace(now, extra_tokens=now.extra_tokens + counted,
                                                  extra={**now.extra, "anchor_tokens": _anchor(now) + counted,
                                                         "anchor": a.reason})
                    touched = True
            if moved:  # the hidden project context: after the system breakpoint, ahead of the conversation
                context = Message("system", "", extra_tokens=max(0, round(moved / self.scale) - self.message_tokens),
                                  extra={"hidden_context_tokens": moved, "pinned": True})
                messages.insert(0, context)
                touched = True
            if s.id in self.fitted_ttl:
                new = replace(new, extra={**new.extra, FITTED_TTL_KEY: self.fitted_ttl[s.id]})
            warm = self.warm_start_tokens.get(s.id)
            if warm:
                new = replace(new, extra={**new.extra, "warm_start_tokens": warm})
            facts = self.cache_facts.get(s.id)
            if facts:  # the provider's recorded cache behaviour (caching/recorded.RecordedFacts)
                new = replace(new, extra={**new.extra, FACTS_KEY: dict(facts)})
            if touched:
                new = replace(new, messages=tuple(messages))
            changed = changed or new is not s
            sessions.append(new)
        out = replace(trace, sessions=tuple(sessions)) if changed else trace
        if self.growth_model is None or not self.growth_from:
            return out
        from ctxsim.analysis.growth import carry

        wanted = {s.id: tuple(range(self.growth_from[s.id], s.requests + 1)) for s in out.sessions
                  if s.id in self.growth_from}
        return carry(out, counter or TokenCounter(get_tokenizer(self.tokenizer)), self, self.growth_model, wanted)[0]

    def to_json(self) -> dict[str, Any]:
        return {"scale": round(self.scale, 4), "message_tokens": self.message_tokens, "file_weight": self.file_weight,
                "hidden_prefix_tokens": self.hidden_prefix_tokens,
                "group_prefix_tokens": dict(self.group_prefix_tokens), "group_requests": dict(self.group_requests),
                "session_prefix_tokens": dict(self.session_prefix_tokens),
                "requests_used": self.requests_used, "requests_excluded": self.requests_excluded,
                "tokenizer": self.tokenizer, "model": self.model, "notes": list(self.notes),
                "mode": self.mode, "source": self.source, "fell_back": self.fell_back,
                "fallback_reason": self.fallback_reason,
                "fitted_scale": None if self.fitted_scale is None else round(self.fitted_scale, 4),
                "fitted_message_tokens": None if self.fitted_message_tokens is None
                else round(self.fitted_message_tokens, 2),
                "prior": self.prior.to_json() if self.prior else None,
                "anchors": [a.to_json() for a in self.anchors], "missing": self.missing_report,
                "quality": dict(self.quality),
                "recorded_cost_usd": None if self.recorded_cost_usd is None else str(self.recorded_cost_usd),
                "cost_usd": None if self.cost_usd is None else str(self.cost_usd),
                "cost_range_usd": None if self.cost_range_usd is None else [str(v) for v in self.cost_range_usd],
                "session_cost_ranges_usd": {k: [str(lo), str(hi)] for k, (lo, hi) in self.session_cost_ranges.items()},
                "warm_start_tokens": dict(self.warm_start_tokens),
                "system_layer_tokens": dict(self.system_layer_tokens),
                "context_tokens": dict(self.context_tokens),
                "cache_facts": cache_anchor.to_json(self.cache_facts, self.cache_facts_moved),
                "growth_model": self.growth_model.to_json() if self.growth_model is not None else None}


# ---------------------------------------------------------------- the fit


@dataclass
class _Segment:
    session: str
    points: list[tuple[Request, int]] = field(default_factory=list)  # (request, counted fixed tokens)
    reason: str | None = None  # why it starts (None: the session part's first)


def gaps_by_session(trace: Trace, reports: Sequence[Any] | None) -> dict[str, list[int]]:
    """Skipped line numbers per session id, from the readers' FileReports (in the order they were read)."""
    out: dict[str, list[int]] = {}
    if not reports:
        return out
    sessions = iter(trace.sessions)
    for report in reports:
        if not getattr(report, "format", ""):
            continue
        for _ in range(getattr(report, "sessions", 0)):
            s = next(sessions, None)
            if s is not None and report.skipped_lines:
                out[s.id] = sorted(report.skipped_lines)
    return out


def _segments(trace: Trace, sizer: MessageSizer, per_session: list[list[Request]],
              skipped: Mapping[str, Sequence[int]], prior: TokenPrior) -> list[_Segment]:
    """Each session part's recorded requests, split where the log shows it misses something."""
    out: list[_Segment] = []
    for session, requests in zip(trace.sessions, per_session, strict=True):
        fixed = sizer.system(session) + sizer.tools(session)
        gaps = sorted(skipped.get(session.id, ()))
        previous: Request | None = None
        current: _Segment | None = None
        for r in requests:
            if not _billed(r):
                continue
            reason = None
            if previous is not None and current is not None:
                reason = _break(session, previous, r, gaps, prior, current.points[0][0])
            if current is None or reason is not None:
                current = _Segment(session.id, reason=reason)
                out.append(current)
            current.points.append((r, fixed))
            previous = r
    return out


def _break(session: Session, previous: Request, r: Request, gaps: Sequence[int], prior: TokenPrior,
           start: Request) -> str | None:
    """Why the log misses something between `previous` and `r` (None: nothing); `start`: the segment's first."""
    lo = session.messages[previous.position].line
    hi = r.recorded.line
    if gaps and lo is not None and hi is not None and any(lo < g < hi for g in gaps):
        return "skipped lines"
    if r.recorded.extra.get("total_reset"):
        return "resumed process"
    for event in session.events:  # the product's own edit inside a session part: the log records it, the
        if event.name in PRODUCT_EDITS and previous.position < event.position <= r.position:  # replay keeps all
            return f"{event.name} in the log"
    before, now = previous.recorded.usage, r.recorded.usage
    assert before is not None and now is not None
    fell = now.input_tokens - before.input_tokens
    counted = prior.scale * (r.prompt_tokens - previous.prompt_tokens + prior.message_tokens
                             * (r.messages - previous.messages))
    tolerance = max(DROP_TOLERANCE_TOKENS, 0.02 * before.input_tokens)
    if fell < -tolerance and fell - counted < -tolerance:
        return "unexplained drop"
    if fell - counted > max(GROWTH_TOLERANCE_TOKENS, GROWTH_SHARE * before.input_tokens, counted):
        return GROWTH
    # the same over the segment so far: a log that holds a fraction of every message drifts slowly
    first = start.recorded.usage
    assert first is not None
    grew = now.input_tokens - first.input_tokens
    explained = prior.scale * (r.prompt_tokens - start.prompt_tokens + prior.message_tokens
                               * (r.messages - start.messages))
    if grew - explained > max(GROWTH_TOLERANCE_TOKENS, GROWTH_SHARE * before.input_tokens, explained):
        return GROWTH
    return None


def _huber(x: Any, y: Any, group: Any, iterations: int = 40) -> Any:
    """Slopes of y on the columns of x with one free intercept per `group` (segment), by weighted
    within-group demeaning (the same fit as one dummy column per group, in O(n) memory), Huber
    weights (k = 1.345 robust sigma): outliers pull little. None when the slopes are not determined."""
    import numpy as np

    groups = int(group.max()) + 1
    w = np.ones(len(y))
    beta = None
    for _ in range(iterations):
        total = np.bincount(group, weights=w, minlength=groups)
        mean_y = np.bincount(group, weights=w * y, minlength=groups) / total
        xd = np.column_stack([x[:, j] - (np.bincount(group, weights=w * x[:, j], minlength=groups) / total)[group]
                              for j in range(x.shape[1])])
        yd = y - mean_y[group]
        sw = np.sqrt(w)
        a = xd * sw[:, None]
        if np.linalg.matrix_rank(a, tol=1e-6 * max(1.0, float(np.abs(a).max(initial=0.0)))) < x.shape[1]:
            return None
        beta, *_ = np.linalg.lstsq(a, yd * sw, rcond=None)
        r = yd - xd @ beta
        sigma = float(np.median(np.abs(r))) / 0.6745
        if sigma <= 1e-9:
            break
        limit = 1.345 * sigma
        new = np.where(np.abs(r) <= limit, 1.0, limit / np.maximum(np.abs(r), 1e-12))
        if float(np.max(np.abs(new - w))) < 1e-6:
            break
        w = new
    return beta


def _fit_slopes(segments: list[_Segment], prior: TokenPrior) -> tuple[float, float, str, str | None, float | None,
                                                                      float | None]:
    """(scale, overhead, source, why it fell back or None, raw fitted scale, raw fitted overhead).

    Both slopes are fitted where the segments leave two degrees of freedom at least (n >= segments + 3);
    with fewer (a session of 2-3 requests: OpenHands, Gemini CLI and agent-framework traces often are) or
    when the pair lands outside the prior's bounds, ONE slope is fitted with the other from the prior:
    the scale (`fit+prior overhead`) or the overhead (`fit+prior scale`), whichever inside its bounds
    leaves the smaller residual (a tie, as two requests always give: the overhead, since the scale of a
    known tokenizer pair is the better-known prior). Nothing inside the bounds: the priors.
    """
    import numpy as np

    usable = [s for s in segments if len(s.points) >= 2]
    n = sum(len(s.points) for s in usable)
    if n < 2:
        return (prior.scale, float(prior.message_tokens), "priors",
                f"too few requests to fit ({n} within segments of two or more)", None, None)
    rows, ys, group = [], [], []
    for j, seg in enumerate(usable):
        for r, fixed in seg.points:
            rows.append([float(r.prompt_tokens - fixed), float(r.messages)])
            assert r.recorded.usage is not None
            ys.append(float(r.recorded.usage.input_tokens - fixed))
            group.append(j)
    x, y, g = np.array(rows), np.array(ys), np.array(group)
    raw_scale = raw_overhead = None
    shown = f"{n} requests in {len(usable)} segment(s): too few for both slopes"
    if n >= len(usable) + 3:
        beta = _huber(x, y, g)
        if beta is not None:
            raw_scale = float(beta[-2])
            raw_overhead = float(beta[-1]) / raw_scale if raw_scale > 0 else None
            if raw_overhead is not None and prior.scale_low <= raw_scale <= prior.scale_high \
                    and prior.message_tokens_low <= raw_overhead <= prior.message_tokens_high:
                return raw_scale, raw_overhead, "fit", None, raw_scale, raw_overhead
        shown = "singular" if beta is None else (f"scale {raw_scale:.3f}, overhead "
                                                + (f"{raw_overhead:.1f}" if raw_overhead is not None else "undefined"))
    candidates: list[tuple[float, int, float, float, str]] = []  # (residual, preference, scale, overhead, source)
    # the overhead from the prior, the scale fitted alone
    column = x[:, 0] + prior.message_tokens * x[:, 1]
    one = _huber(column[:, None], y, g)
    if one is not None and prior.scale_low <= float(one[-1]) <= prior.scale_high:
        scale = float(one[-1])
        candidates.append((_spread(y - scale * column, g), 1, scale, float(prior.message_tokens),
                           "fit+prior overhead"))
    # the scale from the prior, the overhead fitted alone
    rest = y - prior.scale * x[:, 0]
    one = _huber(x[:, 1:2], rest, g)
    if one is not None:
        overhead = float(one[-1]) / prior.scale
        if prior.message_tokens_low <= overhead <= prior.message_tokens_high:
            candidates.append((_spread(rest - prior.scale * overhead * x[:, 1], g), 0, prior.scale, overhead,
                               "fit+prior scale"))
    if candidates:
        _, _, scale, overhead, source = min(candidates, key=lambda c: (round(c[0], 6), c[1]))
        kept = "overhead" if source == "fit+prior overhead" else "scale"
        if raw_scale is not None and kept == "overhead":
            why = (f"the fit ({shown}) is outside the prior's overhead bounds [{prior.message_tokens_low}, "
                   f"{prior.message_tokens_high}]: overhead kept at the prior")
        else:
            why = f"the fit ({shown}): the {kept} kept at the prior, the other slope fitted alone"
        return scale, overhead, source, why, raw_scale, raw_overhead
    return (prior.scale, float(prior.message_tokens), "priors",
            (f"the fit ({shown}) is outside the priors' bounds (scale [{prior.scale_low}, {prior.scale_high}], "
             f"overhead [{prior.message_tokens_low}, {prior.message_tokens_high}]): priors used"),
            raw_scale, raw_overhead)


def _spread(residual: Any, group: Any) -> float:
    """The sum of squared residuals about each segment's mean (the intercepts are free)."""
    import numpy as np

    groups = int(group.max()) + 1
    means = np.bincount(group, weights=residual, minlength=groups) / np.bincount(group, minlength=groups)
    return float(np.sum((residual - means[group]) ** 2))


def calibration(trace: Trace, tokenizer: str = "o200k_base", counter: TokenCounter | None = None, *,
                mode: str = "fit", skipped_lines: Mapping[str, Sequence[int]] | None = None,
                reports: Sequence[Any] | None = None, prior: TokenPrior | None = None) -> Calibration:
    """The one calibration replay, compare and validate use.

    `mode`: `fit` (scale and overhead fitted on the trace's usage, bounded by the priors) or
    `priors` (no fit). `skipped_lines` (line numbers per session id) or `reports` (the readers'
    FileReports) say where lines were skipped, so the replay re-anchors there. `prior` replaces
    the shipped prior for this tokenizer and provider (e.g. one fitted on other sessions).
    """
    if mode not in MODES:
        raise ValueError(f"unknown calibration mode {mode!r}; known: {', '.join(MODES)}")
    counter = counter or TokenCounter(get_tokenizer(tokenizer))
    name = getattr(counter.tokenizer, "name", tokenizer)
    skipped = dict(skipped_lines or {}) or gaps_by_session(trace, reports)
    widened = None
    if prior is None:
        prior, widened = _marker_bounds(token_prior(name, resolve(trace, Setup())[0].provider), trace)
    cal = _calibration_with(trace, counter, name, skipped, mode, prior)
    if widened:
        cal = replace(cal, notes=(*cal.notes, widened))
    if mode == "fit" and prior.classes is not None:  # the ratios by content class, where they fit better
        by_class = _calibration_with(trace, counter, name, skipped, mode, prior.by_class())
        one, two = _fit_quality(cal), _fit_quality(by_class)
        file_scale, rest_scale = prior.classes
        classes = f"by content class (file content {file_scale:g}, the rest {rest_scale:g}; the priors' classes)"
        if two < one:
            said = (f"token ratio {classes}: prompt error median {two[1]:.2%}, against {one[1]:.2%} with one ratio "
                    "for every text")
            cal = replace(by_class, notes=(*by_class.notes, said))
        else:
            said = f"one token ratio for every text: prompt error median {one[1]:.2%}, against {two[1]:.2%} {classes}"
            cal = replace(cal, notes=(*cal.notes, said))
    return _with_growth(trace, counter, cal)


def _with_growth(trace: Trace, counter: TokenCounter, cal: Calibration) -> Calibration:
    """The calibration with its growth model (analysis/growth), where it re-anchored unexplained growth: carried
    into every request after each session's last billed one (into all of a session no bill covers)."""
    from ctxsim.analysis.growth import learn

    model = learn(trace, counter, cal)
    if model is None:
        return cal
    after: dict[str, int] = {}
    for s in trace.sessions:
        index = last = 0
        for m in s.messages:
            if m.role == "assistant":
                index += 1
                if m.usage is not None and m.usage.input_tokens > 0:
                    last = index
        if last < index:
            after[s.id] = last + 1
    return replace(cal, growth_model=model, growth_from=after, notes=(*cal.notes, model.note()))


def _marker_bounds(prior: TokenPrior, trace: Trace) -> tuple[TokenPrior, str | None]:
    """The prior with its scale bounds widened where the log holds redaction markers (tokens/redacted.py:
    their size is an estimate at 4 characters a token), and the note that says so; unchanged without."""
    from ctxsim.tokens import redacted

    marked = sum(redacted.marker_count(redacted.session_texts(s)) for s in trace.sessions)
    if not marked:
        return prior, None
    low, high = redacted.SCALE_SPAN
    wide = replace(prior, scale_low=round(prior.scale_low * low, 4), scale_high=round(prior.scale_high * high, 4))
    return wide, (f"{marked:,} redacted text(s) sized by their markers' length at {redacted.CHARS_PER_TOKEN} "
                  f"characters a token: scale bounds widened to [{wide.scale_low}, {wide.scale_high}]")


def _fit_quality(cal: Calibration) -> tuple[bool, float, float]:
    """How well a calibration reproduces its trace, smaller better: (fell back, prompt error median, p90)."""
    q = cal.quality
    return cal.fell_back, float(q.get("prompt_error_median", 0.0)), float(q.get("prompt_error_p90", 0.0))


def _calibration_with(trace: Trace, counter: TokenCounter, name: str, skipped: Mapping[str, Sequence[int]],
                      mode: str, prior: TokenPrior) -> Calibration:
    """`calibration` with this prior (its content-class weight, when it has one)."""
    unit = replace(BASE_FRAMING, file_weight=prior.file_weight)  # counted tokens, file content at its weight
    _, _, _, base = replay_none(trace, counter, unit, Setup())
    segments = _segments(trace, MessageSizer(counter, unit), base, skipped, prior)
    used = sum(len(s.points) for s in segments)
    notes: list[str] = []
    if mode == "fit":
        scale, overhead, source, why, raw_scale, raw_overhead = _fit_slopes(segments, prior)
    else:
        scale, overhead, source, why, raw_scale, raw_overhead = (prior.scale, float(prior.message_tokens), "priors",
                                                                 None, None, None)
    if why:
        notes.append(why)
    shell = Calibration(scale, max(0, round(overhead)), 0, {}, {}, used,
                        sum(1 for s in segments if len(s.points) == 1), name, notes=tuple(notes), mode=mode,
                        source=source, fell_back=why is not None and source != "fit", fallback_reason=why,
                        fitted_scale=raw_scale, fitted_message_tokens=raw_overhead, prior=prior,
                        file_weight=prior.file_weight)
    framing = shell.framing()
    sizer = MessageSizer(counter, framing)
    _, _, _, scaled = replay_none(trace, counter, framing, Setup())
    sim = {(r.session, r.index): r.prompt_tokens for rs in scaled for r in rs}
    # fitted slopes: each segment's level is its median residual; priors: its first request (an anchor)
    prefixes, anchors = _intercepts(trace, segments, sim, source != "priors")
    groups: dict[str, list[int]] = {}
    for s in trace.sessions:
        if s.id in prefixes:
            groups.setdefault(group_of(s), []).append(prefixes[s.id])
    group_prefix = {g: round(median(v)) for g, v in groups.items()}
    for s in trace.sessions:  # sessions with no recorded usage: their group's, else the product's prior
        if s.id not in prefixes:
            if group_of(s) in group_prefix:
                prefixes[s.id] = group_prefix[group_of(s)]
            else:
                tokens, where = prefix_prior(s.source, _kind(s))
                prefixes[s.id] = max(0, tokens - sizer.system(s) - sizer.tools(s)) if tokens else 0
                if tokens:
                    notes.append(f"{s.id}: no recorded usage; hidden prefix {tokens:,} tokens from the "
                                 f"{s.source} prior ({where})")
    hidden = min(prefixes.values()) if prefixes else 0
    billed_parts = {seg.session for seg in segments}
    reattached = {s.id: max(0, prefixes[s.id] - prefixes[s.extra["continues"]]) for s in trace.sessions
                  if s.id in billed_parts and s.extra.get("continues") in billed_parts}
    placeholders = tuple((r.session, r.index) for rs in base for r in rs
                         if r.recorded.usage is not None and r.recorded.usage.extra.get("output_placeholder"))
    warm = {}
    for rs in base:
        first = next((r for r in rs if _billed(r)), None)
        if first is not None and first.recorded.usage is not None and first.recorded.usage.cache_read_tokens:
            warm[first.session] = first.recorded.usage.cache_read_tokens
    layers = _system_layers(trace, base, prefixes, sizer)
    by_id = {s.id: s for s in trace.sessions}
    context = {sid: moved for sid, layer in layers.items()
               if (moved := max(0, min(sizer.system(by_id[sid]) + sizer.tools(by_id[sid]) + prefixes[sid] - layer,
                                       prefixes[sid])))}
    if layers:
        notes.append("cache reads stopped inside the hidden prefix at a break in " + ", ".join(
            f"{sid[-12:]} ({tokens:,} tokens)" for sid, tokens in sorted(layers.items()))
            + ": the rest of that prefix is replayed as project context after the system breakpoint")
    cal = replace(shell, hidden_prefix_tokens=hidden, group_prefix_tokens=group_prefix,
                  group_requests=_group_requests(trace, segments),
                  session_groups={s.id: group_of(s) for s in trace.sessions}, session_prefix_tokens=prefixes,
                  anchors=tuple(anchors), placeholder_outputs=placeholders, notes=tuple(notes),
                  warm_start_tokens=warm, reattached_tokens=reattached, system_layer_tokens=layers,
                  context_tokens=context)
    return _assess(trace, counter, cal)


LAYER_MIN_TOKENS = 1024  # the smallest cacheable prefix (Anthropic, most models): a layer boundary below is noise


def _system_layers(trace: Trace, per_session: list[list[Request]], prefixes: Mapping[str, int],
                   sizer: MessageSizer) -> dict[str, int]:
    """Per session part, the largest recorded cache read that stopped inside its hidden prefix at a break.

    A break: a request that read less than 95 % of the previous request's whole prompt. Where the read
    stops inside the base (visible system and tools + the hidden prefix), the provider held a cache entry
    there, a breakpoint: the stable system layer. Nothing is inferred where no such stop is recorded.
    """
    out: dict[str, int] = {}
    for session, requests in zip(trace.sessions, per_session, strict=True):
        if session.id not in prefixes:
            continue
        base = sizer.system(session) + sizer.tools(session) + prefixes[session.id]
        previous: Message | None = None
        stops = []
        for r, u in _billed_usage(requests):
            if previous is not None and previous.usage is not None:
                read = u.cache_read_tokens
                if LAYER_MIN_TOKENS <= read < 0.95 * previous.usage.input_tokens and read <= base - LAYER_MIN_TOKENS:
                    stops.append(read)
            previous = r.recorded
        if stops:
            out[session.id] = max(stops)
    return out


def _group_requests(trace: Trace, segments: list[_Segment]) -> dict[str, int]:
    group = {s.id: group_of(s) for s in trace.sessions}
    out: dict[str, int] = {}
    for seg in segments:
        out[group[seg.session]] = out.get(group[seg.session], 0) + len(seg.points)
    return out


def _intercepts(trace: Trace, segments: list[_Segment], sim: Mapping[tuple[str, int], int], median_of: bool
                ) -> tuple[dict[str, int], list[Anchor]]:
    """Each session part's hidden prefix and each later segment's anchor, on the applied framing."""
    prefixes: dict[str, int] = {}
    anchors: list[Anchor] = []
    level: dict[str, int] = {}
    last: dict[str, int] = {}  # the position of each session's latest request seen
    sessions = {s.id: s for s in trace.sessions}
    for seg in segments:
        before = last.get(seg.session)
        last[seg.session] = seg.points[-1][0].position
        residuals = []
        for r, _ in seg.points:  # the replayed prompt already holds the counted system and tools
            assert r.recorded.usage is not None
            residuals.append(r.recorded.usage.input_tokens - sim[(r.session, r.index)])
        value = round(median(residuals)) if median_of else residuals[0]
        if seg.reason is None:
            first, fixed = seg.points[0]
            assert first.recorded.usage is not None
            whole = first.recorded.usage.input_tokens - fixed
            value = max(0, min(value, whole))  # never more than that part's first request's whole prompt
            prefixes[seg.session] = value
            level[seg.session] = value
            continue
        first, _ = seg.points[0]
        delta = value - level.get(seg.session, 0)
        level[seg.session] = value
        if delta:
            spread: tuple[int, ...] = ()
            if seg.reason == GROWTH and delta > 0 and before is not None:
                spread = tuple(range(before, first.position))  # the previous response and what followed it
            anchors.append(Anchor(seg.session, first.index, _carrier(sessions[seg.session], first.position), delta,
                                  seg.reason, spread))
    return prefixes, anchors


def _carrier(session: Session, position: int) -> int:
    """The message an anchor before the request at `position` goes on: the latest non-assistant one since
    the previous response, else that response."""
    i = position - 1
    while i >= 0 and session.messages[i].role != "assistant":
        if session.messages[i].role in ("user", "tool", "summary"):
            return i
        i -= 1
    return max(0, position - 1)


def _assess(trace: Trace, counter: TokenCounter, cal: Calibration) -> Calibration:
    """Replay the calibrated `none`: in-sample quality, recorded and simulated cost, and the cost range.

    The first replay is the cache model alone: it gives the cost range and the requests whose recorded
    read the model cannot produce (analysis/cache_anchor). With any, the calibration carries them as the
    provider's facts and a second replay with them gives the quality and the point estimate (inside
    the range: its low end is the model without them)."""
    applied = cal.apply(trace, counter)
    replayer, _, _, per_session = replay_none(applied, counter, cal.framing(), cal.setup())
    writes_cache = replayer.resolved.provider == "anthropic"
    breaks = 0
    low_cost = high_cost = Decimal(0)
    ranges: dict[str, tuple[Decimal, Decimal]] = {}
    for session, requests in zip(applied.sessions, per_session, strict=True):
        shared = (session.system_tokens if session.system_tokens is not None else 0) \
            + cal.base_prefix_tokens + MessageSizer(counter, cal.framing()).tools(session)
        s_low = s_high = Decimal(0)
        first = first_seen = True
        previous: int | None = None
        for r, u in _billed_usage(requests):
            row = r.row
            pricer = replayer.pricer_for(session, r.recorded)  # the request's own model's prices
            ts = r.recorded.ts_s
            low = row.cost_warm_usd
            if first:  # the shared prefix may have been cached by another session before this log starts
                low = min(low, _warm_start(pricer, row, shared, ts))
            elif not writes_cache and previous is not None:  # OpenAI-style: the cache may run into the response
                low = min(low, _warm_start(pricer, row, previous, ts))
                first = False
            high = row.cost_usd
            if first_seen and cal.warm_start_tokens.get(session.id):  # the replay read it warm, as recorded:
                # another run of the session may find that prefix cold (high end: written, or sent fresh)
                high = max(high, _cache_break(pricer, row, max(0, row.cache_read_tokens - cal.warm_start_tokens[
                    session.id]), writes_cache, ts))
            if not first_seen and u.cache_read_tokens < row.cache_read_tokens - 0.05 * u.input_tokens:
                # the provider rewrote what the replay reads, with nothing in the log changed
                high = max(high, _cache_break(pricer, row, u.cache_read_tokens, writes_cache, ts))
                breaks += 1
            first_seen = False
            previous = row.input_tokens + row.output_tokens  # what the next request may find cached
            s_low += low
            s_high += high
        if s_high or s_low:
            ranges[session.id] = (min(s_low, s_high), s_high)
        low_cost += min(s_low, s_high)
        high_cost += s_high
    facts = cache_anchor.recorded_facts(applied.sessions, per_session)
    moved = {"down": 0, "up": 0, "unwritten": 0}
    if facts:  # replayed again with the provider's recorded cache facts: the point estimate
        cal = replace(cal, cache_facts=facts)
        applied = cal.apply(trace, counter)
        replayer, _, _, with_facts = replay_none(applied, counter, cal.framing(), cal.setup())
        moved = cache_anchor.moved_tokens(per_session, with_facts, facts)
        per_session = with_facts
    errors: list[float] = []
    rec_in = sim_in = rec_read = sim_read = 0
    rec_cost = sim_cost = Decimal(0)
    for session, requests in zip(applied.sessions, per_session, strict=True):
        s_cost = Decimal(0)
        for r, u in _billed_usage(requests):
            row = r.row
            pricer = replayer.pricer_for(session, r.recorded)
            errors.append((row.input_tokens - u.input_tokens) / u.input_tokens)
            rec_in += u.input_tokens
            sim_in += row.input_tokens
            rec_read += u.cache_read_tokens
            sim_read += row.cache_read_tokens
            rec_cost += pricer.cost(Bill(u.input_tokens, u.cache_read_tokens, u.cache_write_tokens,
                                         u.cache_write_1h_tokens, u.output_tokens), r.recorded.ts_s)
            s_cost += row.cost_usd
        sim_cost += s_cost
        if session.id in ranges:  # the point estimate inside its range
            lo, hi = ranges[session.id]
            ranges[session.id] = (min(lo, s_cost), max(hi, s_cost))
    low_cost, high_cost = min(low_cost, sim_cost), max(high_cost, sim_cost)
    ordered = sorted(abs(e) for e in errors)

    def q(p: float) -> float:
        return ordered[max(1, math.ceil(p * len(ordered))) - 1] if ordered else 0.0

    ceilings, floors, fresh = cache_anchor.counts(facts)
    quality = {"requests": len(errors), "prompt_error_median": round(q(0.5), 6), "prompt_error_p90": round(q(0.9), 6),
               "hit_rate_error_points": round(((sim_read / sim_in if sim_in else 0.0)
                                              - (rec_read / rec_in if rec_in else 0.0)) * 100, 4),
               "cost_error": round(float((sim_cost - rec_cost) / rec_cost), 6) if rec_cost else None,
               "cache_breaks": breaks, "cache_ceilings": ceilings, "cache_floors": floors,
               "cache_fresh_tails": fresh}
    notes = list(cal.notes)
    if breaks and not ceilings:  # a ceiling says the same, and what the replay did with it
        notes.append(f"{breaks} request(s) read less from the cache than the replay within the cache lifetime, "
                     "with nothing in the log changed (a change the log does not show, or a provider miss): "
                     "the cost range's high end bills them as recorded")
    said = cache_anchor.note(facts, moved)
    if said:
        notes.append(said)
    return replace(cal, quality=quality, recorded_cost_usd=rec_cost, cost_usd=sim_cost, notes=tuple(notes),
                   cost_range_usd=(low_cost, high_cost) if errors else None, session_cost_ranges=ranges,
                   cache_facts=facts, cache_facts_moved=moved)


def _cache_break(pricer: Pricer, row: Any, read: int, writes_cache: bool, ts: float | None) -> Decimal:
    """The request's cost had the cache given only `read` tokens (the rest written, or uncached)."""
    lost = max(0, row.cache_read_tokens - read)
    write = row.cache_write_tokens + (lost if writes_cache else 0)
    return pricer.cost(Bill(row.input_tokens, row.cache_read_tokens - lost, write, row.cache_write_1h_tokens,
                            row.output_tokens), ts)


def _warm_start(pricer: Pricer, row: Any, shared: int, ts: float | None) -> Decimal:
    """The first request's cost had `shared` prefix tokens already been cached (read instead of written)."""
    writes = row.cache_write_tokens + row.cache_write_1h_tokens
    uncached = row.input_tokens - row.cache_read_tokens - writes
    move = max(0, min(shared, row.input_tokens) - row.cache_read_tokens)
    from_writes = min(move, writes)
    from_uncached = min(move - from_writes, uncached)
    w5 = max(0, row.cache_write_tokens - from_writes)
    w1 = row.cache_write_1h_tokens - max(0, from_writes - row.cache_write_tokens)
    return pricer.cost(Bill(row.input_tokens, row.cache_read_tokens + from_writes + from_uncached, w5, w1,
                            row.output_tokens), ts)


def fit(trace: Trace, tokenizer: str = "o200k_base", counter: TokenCounter | None = None, *,
        mode: str = "fit", skipped_lines: Mapping[str, Sequence[int]] | None = None,
        reports: Sequence[Any] | None = None) -> Calibration | None:
    """`calibration(...)`, or None when fewer than 3 requests recorded usage (nothing to calibrate on)."""
    recorded = sum(1 for s in trace.sessions for m in s.messages
                   if m.role == "assistant" and m.usage is not None and m.usage.input_tokens > 0)
    if recorded < MIN_REQUESTS:
        return None
    return calibration(trace, tokenizer, counter, mode=mode, skipped_lines=skipped_lines, reports=reports)


def calibrated(trace: Trace, tokenizer: str = "o200k_base", framing: Framing | None = None,
               setup: Setup | None = None, *, mode: str = "fit", reports: Sequence[Any] | None = None,
               ) -> tuple[Trace, Framing | None, Setup, Calibration | None]:
    """Everything a replay needs to run calibrated: (trace, framing, setup, the fit or None).

    For replay/compare: `trace, framing, setup, cal = calibrated(trace, tokenizer, framing, setup)`,
    then replay with them and `cal.policy(policy, provider, model)` (unchanged when the trace has
    too few recorded requests).
    """
    cal = fit(trace, tokenizer, mode=mode, reports=reports)
    if cal is None:
        return trace, framing, setup or Setup(), None
    return cal.apply(trace), cal.framing(framing), cal.setup(setup), cal

