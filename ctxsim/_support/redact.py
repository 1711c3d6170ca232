"""Secrets out of any trace text ctxsim shows: one rule per kind of credential, applied in order.

ctxsim shows no trace content (message text, thinking, tool arguments and output, file contents) in any
output unless the user passes `--include-content`; what it then shows goes through `redact` first, so a
key pasted into a prompt or printed by a tool never reaches a terminal, a report or a CI log. A match is
replaced by `[REDACTED:<rule>]`; the text around it stays, so a preview still says what it was about.

The rules (name: what it matches):

- `private_key`: a PEM private key block, `-----BEGIN ... PRIVATE KEY-----` to its END line (or to the end
  of the text when the block is cut off);
- `url_password`: the password of `scheme://user:password@host` (the user and the host stay);
- `authorization`: the credential of an `Authorization:` / `Proxy-Authorization:` header (any scheme) and
  any `Bearer <token>`;
- `anthropic_key`: `sk-ant-...` (checked before `openai_key`, which would take it too);
- `openai_key`: `sk-...`, `sk-proj-...`, `sk-svcacct-...`, `sk-admin-...`;
- `stripe_key`: `sk_live_`, `sk_test_`, `rk_live_`, `rk_test_` keys;
- `google_api_key`: `AIza` and 35 characters;
- `slack_token`: `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`, `xoxe-` tokens and `xapp-` app tokens;
- `huggingface_token`: `hf_` and 30 or more letters and digits;
- `aws_access_key`: `AKIA` / `ASIA` (and the other AWS key id prefixes) and 16 capitals or digits;
- `github_token`: `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and 36 or more characters, and `github_pat_...`;
- `secret_assignment`: the value of `api_key=`, `x-api-key:`, `secret_key:`, `password=`, `token=`,
  `aws_secret_access_key=`, ... (an 8-character value or longer).

Each rule asks for the length and alphabet its provider documents, so that ordinary words (`sk-learn`,
`hf_hub`, `task-manager`) are left alone; tests/test_redact.py holds a positive and a negative case for
every rule.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    keep: int = 0  # capture groups 1..keep stay (the context around the secret: a header name, a URL's user)


def _rule(name: str, pattern: str, keep: int = 0, flags: int = 0) -> Rule:
    return Rule(name, re.compile(pattern, flags), keep)


_TAIL = r"(?![A-Za-z0-9_-])"  # a key ends where its alphabet does

RULES: tuple[Rule, ...] = (
    _rule("private_key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
                         r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)", flags=re.DOTALL),
    _rule("url_password", r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@\"'<>]+:)[^\s/?#@\"'<>]+(?=@)", keep=1),
    _rule("authorization", r"(\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest|"
                           r"apikey|bot)\s+)?)[^\s\"',;]+", keep=1, flags=re.IGNORECASE),
    _rule("authorization", r"(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}", keep=1, flags=re.IGNORECASE),
    _rule("anthropic_key", r"\bsk-ant-[A-Za-z0-9_-]{20,}" + _TAIL),
    _rule("openai_key", r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}" + _TAIL),
    _rule("stripe_key", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}" + _TAIL),
    _rule("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}" + _TAIL),
    _rule("slack_token", r"\b(?:xox[abeprs]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})" + _TAIL),
    _rule("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}" + _TAIL),
    _rule("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}\b"),
    _rule("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})" + _TAIL),
    _rule("secret_assignment", r"(\b(?:[A-Za-z0-9]+[_-])*(?:api[_-]?key|secret(?:[_-]access)?[_-]key|secret|"
                               r"password|passwd|token|access[_-]token|auth[_-]token)\b[\"']?\s*[:=]\s*[\"']?)"
                               r"[^\s\"',;]{8,}", keep=1, flags=re.IGNORECASE),
)


def _kept(rule: Rule, m: re.Match[str]) -> str:
    """The groups `rule` keeps (a key's name, its quote), then the marker."""
    return "".join(m.group(i) or "" for i in range(1, rule.keep + 1)) + f"[REDACTED:{rule.name}]"


def redact(text: str) -> str:
    """`text` with every secret a rule matches replaced by `[REDACTED:<rule>]`."""
    for rule in RULES:
        if rule.keep:
            text = rule.pattern.sub(functools.partial(_kept, rule), text)
        else:
            text = rule.pattern.sub(f"[REDACTED:{rule.name}]", text)
    return text


def preview(text: str, chars: int) -> str:
    """The start of a text for a listing: redacted first (a secret cut in half is still found), whitespace
    collapsed to single spaces, at most `chars` characters."""
    return " ".join(redact(text).split())[:chars]


QUOTED_CHARS = 40  # what an error line or a note quotes of a value read from a trace, at most


def quoted(value: object, chars: int = QUOTED_CHARS) -> str:
    """A value read from a trace as an error line or a note quotes it: redacted first (a key in a `role`
    or `model` field is never echoed), then cut to `chars` characters (an ellipsis says so), in quotes."""
    text = redact(value if isinstance(value, str) else repr(value))
    cut = text if len(text) <= chars else text[:chars] + "..."
    return repr(cut)


# A model id as providers and products write them: letters and digits first, then letters, digits and
# `.-_:/@+[]` (`claude-opus-4-6[1m]`, `anthropic/claude-3.5-sonnet`, `gpt-4o-2024-08-06`,
# `models/gemini-2.5-pro`, `qwen3-coder:30b`, `deepseek-v4-flash`), at most 128 characters; or a
# product's placeholder in angle brackets (Claude Code's `<synthetic>`).
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+\[\]-]{0,127}|<[a-z][a-z_-]{0,30}>")  # or `<synthetic>`


def plausible_model(name: str) -> bool:
    """Whether `name` can be a model id: its alphabet and length, and no secret a rule finds in it. A
    name that is not is neither echoed nor stored (`formats` drops it and counts it in the notes)."""
    return _MODEL_ID.fullmatch(name) is not None and redact(name) == name


__all__ = ["QUOTED_CHARS", "RULES", "Rule", "plausible_model", "preview", "quoted", "redact"]
