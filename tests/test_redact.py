"""Redaction: every rule of ctxsim._support.redact, and no trace content in any command's output unless asked.

The sweep runs every command that reads a trace (and the ones that read what they wrote) on a trace with
secrets in the system prompt, user text, thinking, tool arguments, tool output and a tool schema, and
looks for each secret (and for plain marker words of that content) in everything the command printed
and wrote. `convert` is exempt: its output is the trace.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim._support.redact import RULES, preview, redact
from ctxsim.cli import app

# Fake credentials, each of the shape its provider issues (none is real).
OPENAI = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7dEf0h"
OPENAI_OLD = "sk-4f9Qx2LmN8pRt6VwY1zA3bC5dE7gH9jK0mN2pQ4s"
ANTHROPIC = "sk-ant-api03-Zx8Cv7Bn6Mm5Ll4Kk3Jj2Hh1Gg0Ff9Dd8Ss7Aa6Qq5Ww4Ee3Rr2Tt1Yy0Uu-Ii9Oo8PpAA"
GOOGLE = "AIzaSyD3f8Gh2Jk5Lm9Np4Qr7St1Uv6Wx0Yz3Ab"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
STRIPE = "sk_live_51HqLyjWDarjtT1zdp7dcXyZaBcDeFgHiJkL"
HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_1A2b3C4d5E6f7G8h9I0j1K2l3M4n5O6p7Q8r"
GITHUB_PAT = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
PRIVATE_KEY = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7yNq8vRkT3bXcd9fGhJ2kLmN4pQrS6tUvWxY\n"
               "zA1bC3dE5fG7hI9jK0lM2nO4pQ6rS8tU\n-----END RSA PRIVATE KEY-----")
KEY_BODY = "MIIEowIBAAKCAQEA7yNq8vRkT3bXcd9fGhJ2kLmN4pQrS6tUvWxY"
URL_PASSWORD = "hunter2Secret99"
URL = f"postgres://admin:{URL_PASSWORD}@db.internal:5432/app"
BEARER = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"

SECRETS = [OPENAI, OPENAI_OLD, ANTHROPIC, GOOGLE, SLACK, STRIPE, HF, AWS, GITHUB, GITHUB_PAT, KEY_BODY,
           URL_PASSWORD, BEARER]


# ---------------------------------------------------------------- the rules, one by one

CASES: dict[str, tuple[list[str], list[str]]] = {  # rule -> (texts it must redact, texts it must leave alone)
    "private_key": ([PRIVATE_KEY, "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA (cut off"],
                    ["-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----"]),
    "url_password": ([URL, "https://bob:p%40ss-w0rd@example.com/x"],
                     ["https://example.com/a:b@c", "see https://docs.python.org/3/library/re.html", "user@host:22"]),
    "authorization": ([f"Authorization: Bearer {BEARER}", "curl -H 'authorization: Basic dXNlcjpwYXNzd29yZA=='",
                       f"bearer {BEARER}"],
                      ["the authorization flow is described below", "a bearer of bad news"]),
    "anthropic_key": ([ANTHROPIC], ["sk-ant-short", "the sk-ant- prefix"]),
    "openai_key": ([OPENAI, OPENAI_OLD, "export OPENAI sk-svcacct-AbCdEfGhIjKlMnOpQrStUvWxYz012345"],
                   ["pip install scikit-learn sk-learn", "task-management-system-for-teams-and-more"]),
    "stripe_key": ([STRIPE, "rk_test_4eC39HqLyjWDarjtT1zdp7dc"], ["sk_live_short", "disk_live_backup_2024"]),
    "google_api_key": ([GOOGLE], ["AIzaShort", "AIza is how Google keys start"]),
    "slack_token": ([SLACK, "xapp-1-A0123456789-1234567890123-abcdef"], ["xoxb-", "xoxo-hugs-and-kisses"]),
    "huggingface_token": ([HF], ["from huggingface_hub import hf_hub_download", "hf_transfer"]),
    "aws_access_key": ([AWS, "ASIAY34FZKBOKMUTVV7A"], ["AKIA1234", "AKIAIOSFODNN7EXAMPLEXYZ"]),
    "github_token": ([GITHUB, GITHUB_PAT, "gho_16C7e42F292c6912E7710c838347Ae178B4a"],
                     ["ghp_short", "git push origin gh-pages"]),
    "secret_assignment": (["api_key = 'Zm9vYmFyYmF6cXV4'", "X-API-Key: 0123456789abcdef", "DB_PASSWORD=correct-horse"],
                          ["password: <your password>", "max_tokens: 100", "token=abc", "tokens = count(text)"]),
}


def test_every_rule_has_cases():
    assert {r.name for r in RULES} == set(CASES)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_redacts_its_secrets_and_leaves_the_rest(rule):
    positives, negatives = CASES[rule]
    for text in positives:
        out = redact(f"before {text} after")
        assert f"[REDACTED:{rule}]" in out, (rule, text, out)
        assert out.startswith("before ")
    for text in negatives:
        assert redact(text) == text, (rule, text)


def test_the_context_of_a_secret_stays():
    assert redact(URL) == "postgres://admin:[REDACTED:url_password]@db.internal:5432/app"
    assert redact(f"Authorization: Bearer {BEARER}") == "Authorization: Bearer [REDACTED:authorization]"
    assert redact(f"key {AWS}.") == "key [REDACTED:aws_access_key]."
    assert redact(f"x {PRIVATE_KEY} y") == "x [REDACTED:private_key] y"


def test_a_preview_is_redacted_before_it_is_cut():
    """A secret that the cut would halve is still not shown (not even its first characters)."""
    text = "x" * 60 + " " + OPENAI
    shown = preview(text, 70)
    assert len(shown) <= 70
    assert OPENAI[:9] not in shown
    assert "\n" not in preview("a\nb\n\nc", 70)


# ---------------------------------------------------------------- every command, on a trace full of secrets

MARKERS = ["UserWordQuokka", "ThinkingWordNarwhal", "ToolOutputWordAxolotl", "ArgumentWordPangolin",
           "SystemWordOkapi", "AssistantWordTapir"]


def _trace(path: Path) -> Path:
    records = [
        {"type": "session", "version": 1, "id": "leaky", "model": "claude-sonnet-4-5", "provider": "anthropic",
         "system": f"SystemWordOkapi. Deploy with {AWS} and {URL}.",
         "tools": [{"name": "bash", "description": f"run a command; token {GITHUB}",
                    "input_schema": {"type": "object"}}]},
    ]
    t = 0
    for turn in range(1, 9):
        t += 10
        ts = f"2026-01-13T16:{t // 60:02d}:{t % 60:02d}Z"
        records.append({"type": "message", "role": "user", "ts": ts,
                        "content": f"UserWordQuokka {turn}: my key is {OPENAI} and {ANTHROPIC}"})
        records.append({"type": "message", "role": "assistant", "ts": ts,
                        "content": f"AssistantWordTapir DECISION: use {HF}",
                        "thinking": f"ThinkingWordNarwhal the user pasted {GOOGLE}",
                        "tool_calls": [{"id": f"c{turn}", "name": "bash", "arguments": {
                            "command": f"ArgumentWordPangolin curl -H 'Authorization: Bearer {BEARER}' "
                                       f"-d {STRIPE} {SLACK}", "path": "src/app.py"}}],
                        "usage": {"input_tokens": 3000 + 900 * turn, "cache_read_tokens": 2000,
                                  "output_tokens": 80}})
        records.append({"type": "message", "role": "tool", "tool_call_id": f"c{turn}", "name": "bash", "ts": ts,
                        "content": f"{PRIVATE_KEY}\nToolOutputWordAxolotl {GITHUB_PAT} {OPENAI_OLD}\n"
                                    "ValueError: bad thing\n" + "line of output\n" * (40 * turn)})
    records.append({"type": "message", "role": "assistant", "content": f"AssistantWordTapir done {AWS}",
                    "usage": {"input_tokens": 12000, "output_tokens": 20}})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code in (0, 1), (args, result.output, result.exception)
    return result.output + (result.stderr if result.stderr_bytes is not None else "")


def _written(folder: Path) -> str:
    out = []
    for f in sorted(folder.rglob("*")):
        if f.is_file():
            out.append(f.read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, str]:
    """Everything every command printed and wrote, per command, without --include-content."""
    tmp = tmp_path_factory.mktemp("leak")
    trace = str(_trace(tmp / "leaky.jsonl"))
    out: dict[str, str] = {}
    # every registered policy and some presets, set to act on this small trace
    every = ["none", "clear:trigger=2000", "compact:trigger=3000,compact_above=2000,clear_at_least=1000,keep_recent=4",
             "clear_thinking", "truncate:max_lines=5",
             "zones:window=9000", "mask:keep=2", "notes", "recent:keep_last=4", "scored:budget=3000",
             "tiered:max_context_tokens=4000", "amortized", "hierarchical:checkpoint_every=2", "server_compact",
             "ctxkit:trigger=3000,compact_above=2000,clear_at_least=1000", "claude-code", "codex"]
    out["inspect"] = _run("inspect", trace) + _run("inspect", trace, "--json", "--by", "session")
    out["validate"] = _run("validate", trace) + _run("validate", trace, "--json")
    (tmp / "replay").mkdir()
    run = str(tmp / "replay" / "run.json")
    out["replay"] = (_run("replay", trace, *[a for spec in every for a in ("-p", spec)], "-o", run, "--every", "1")
                     + _run("replay", trace, "--json") + _written(tmp / "replay"))
    # a bundle (report.md, charts, tables) once, with few policies: its charts take most of the time
    out["compare"] = (_run("compare", trace, "--policies", "compact:trigger=3000,clear:trigger=2000", "-o",
                           str(tmp / "bundle")) + _written(tmp / "bundle"))
    (tmp / "reports").mkdir()
    out["report table"] = _run("report", run, "-f", "table")
    out["report md"] = _run("report", run, "-f", "md", "--no-charts", "-o", str(tmp / "reports" / "r.md"))
    out["report csv"] = _run("report", run, "-f", "csv")
    out["report events"] = _run("report", run, "-f", "csv", "--table", "events") + _written(tmp / "reports")
    bundle = str(tmp / "bundle" / "run.json")
    out["diff"] = _run("diff", bundle, run) + _run("diff", bundle, run, "--md") + _run("diff", bundle, run, "--json")
    return out


@pytest.mark.parametrize("command", ["inspect", "validate", "replay", "compare", "report table", "report md",
                                     "report csv", "report events", "diff"])
def test_no_command_shows_trace_content_unless_asked(outputs, command):
    text = outputs[command]
    assert text.strip(), command
    for secret in SECRETS:
        assert secret not in text, (command, secret)
        assert secret[:12] not in text, (command, secret[:12])
    for marker in MARKERS:
        assert marker not in text, (command, marker)


def test_inspect_with_include_content_shows_previews_redacted(tmp_path):
    trace = str(_trace(tmp_path / "leaky.jsonl"))
    for args in ((), ("--json",)):
        text = _run("inspect", trace, "--include-content", *args)
        assert "ToolOutputWordAxolotl" in text or "[REDACTED:private_key]" in text  # the preview is there
        assert "[REDACTED:private_key]" in text
        for secret in SECRETS:
            assert secret not in text, secret
    plain = _run("inspect", trace, "--json")
    assert "[REDACTED" not in plain and "preview" not in plain  # without it: no preview at all
