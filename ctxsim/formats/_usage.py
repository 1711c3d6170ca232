"""Usage and model names: a logged usage record in ctxsim's inclusive convention (Anthropic's exclusive
counts, OpenAI-style inclusive ones and the extras litellm and DeepSeek add), and a model name split into
its provider and name (litellm-style prefixes included)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from ctxsim.formats._node import Node
from ctxsim.model import Usage


def usage_anthropic(node: Node) -> Usage:
    """Anthropic's exclusive usage (`input_tokens` excludes cache) in the inclusive convention."""
    uncached = node.count("input_tokens") or 0
    read = node.count("cache_read_input_tokens") or 0
    written = node.count("cache_creation_input_tokens") or 0
    split = node.obj("cache_creation")
    w5 = split.count("ephemeral_5m_input_tokens") if split else None
    w1 = split.count("ephemeral_1h_input_tokens") if split else None
    if w5 is None and w1 is None:
        w5, w1 = written, 0
    w5, w1 = w5 or 0, w1 or 0
    if w5 + w1 != written and written:
        w5 = max(written - w1, 0)  # trust the total; the split is a detail
    output = node.count("output_tokens") or 0
    return Usage(uncached + read + w5 + w1, read, w5, w1, output)


def usage_openai(node: Node) -> Usage:
    """OpenAI-style usage (prompt or input tokens include the cached ones), with the extras
    litellm and DeepSeek add. Counts that exceed the prompt are taken as exclusive and added."""
    prompt = node.count("prompt_tokens")
    if prompt is None:
        prompt = node.count("input_tokens") or 0
    output = node.count("completion_tokens")
    if output is None:
        output = node.count("output_tokens") or 0
    details = node.obj("prompt_tokens_details") or node.obj("input_tokens_details")
    read = (details.count("cached_tokens") if details else None) or 0
    read = max(read, node.count("cache_read_input_tokens") or 0, node.count("cached_input_tokens") or 0,
               node.count("prompt_cache_hit_tokens") or 0, node.count("cache_read_tokens") or 0)
    written = max(node.count("cache_creation_input_tokens") or 0, node.count("cache_write_tokens") or 0,
                  (details.count("cache_write_tokens") or 0) if details else 0)
    if read + written > prompt:  # the prompt count left the cache out: add it back
        prompt += read + written
    return Usage(prompt, read, written, 0, output)


def usage_native(node: Node) -> Usage:
    """Usage already in ctxsim's inclusive field names."""
    counts = {k: node.count(k) or 0 for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens",
                                                "cache_write_1h_tokens", "output_tokens")}
    cached = counts["cache_read_tokens"] + counts["cache_write_tokens"] + counts["cache_write_1h_tokens"]
    if cached > counts["input_tokens"]:
        raise node.fail(f"cache read + writes ({cached:,}) exceed input_tokens ({counts['input_tokens']:,})")
    return Usage(counts["input_tokens"], counts["cache_read_tokens"], counts["cache_write_tokens"],
                 counts["cache_write_1h_tokens"], counts["output_tokens"])


def any_usage(node: Node) -> Usage:
    """Usage in whichever convention its field names show."""
    v = node.value if isinstance(node.value, dict) else {}
    if ("cache_read_tokens" in v or "cache_write_tokens" in v or "cache_write_1h_tokens" in v) \
            and "prompt_tokens" not in v:
        return usage_native(node)
    if "prompt_tokens" in v or "completion_tokens" in v or "prompt_tokens_details" in v or \
            "input_tokens_details" in v or "cached_input_tokens" in v:
        return usage_openai(node)
    if "cache_creation_input_tokens" in v or "cache_read_input_tokens" in v or "cache_creation" in v:
        return usage_anthropic(node)
    return usage_openai(node)


# ---------------------------------------------------------------- models and providers

_PROVIDER_PREFIXES = {
    "anthropic": "anthropic", "openai": "openai", "azure": "openai", "deepseek": "deepseek",
    "gemini": "google", "vertex_ai": "google", "google": "google", "mistral": "mistral", "groq": "groq",
    "bedrock": "anthropic",
}


def split_model(model: str | None) -> tuple[str | None, str | None]:
    """(provider, model) from a model name, litellm-style prefixes (`anthropic/claude-...`) included."""
    if not model:
        return None, None
    name = model
    provider = None
    if "/" in name:
        prefix, rest = name.split("/", 1)
        provider = _PROVIDER_PREFIXES.get(prefix.lower())
        if prefix.lower() in ("openrouter", "together_ai", "litellm_proxy", "hosted_vllm") and "/" in rest:
            sub, rest2 = rest.split("/", 1)
            provider = _PROVIDER_PREFIXES.get(sub.lower())
            rest = rest2
        name = rest
    low = name.lower()
    if provider is None:
        if "claude" in low:
            provider = "anthropic"
        elif low.startswith(("gpt", "o1", "o3", "o4", "codex", "chatgpt", "text-")):
            provider = "openai"
        elif low.startswith("gemini"):
            provider = "google"
        elif low.startswith("deepseek"):
            provider = "deepseek"
    return provider, name


def recorded_usd(value: Any, text_too: bool = False) -> Decimal | None:
    """A cost a log recorded, as an exact Decimal (a float by its shortest repr: 0.1 is 0.1); None for what is
    not a finite non-negative number. `text_too`: a number written as a string counts too (Cline's)."""
    kinds: tuple[type, ...] = (int, float, str) if text_too else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        return None
    try:
        out = Decimal(repr(value) if isinstance(value, float) else str(value))
    except InvalidOperation:
        return None
    return out if out.is_finite() and out >= 0 else None
