"""Fixtures for tests/test_recorded.py, written by code from the format descriptions
(reference/trace-formats.md): a Claude Code session and a Codex rollout that each recorded the
product's own auto-compaction, and a native trace with hand-set usage and its own cost.

Each turn pastes one large user message (the first a small one; no tool results, so a clearing
stage frees nothing), so request k sends about prefix + 100 + (step + 8) * (k - 1) tokens and the
request at which a threshold is crossed is known by hand. The product compacts after request
`before`, as the products do: once the last response's total (its prompt and output) is past the
threshold, before the next request.
"""

from __future__ import annotations

import json
from pathlib import Path

DAY = "2026-01-13T16:"


def stamp(second: int) -> str:
    return f"{DAY}{second // 60:02d}:{second % 60:02d}.000Z"


def paste(i: int, tokens: int) -> str:
    """About `tokens` chars4 tokens of pasted log text (4 characters a token)."""
    line = f"log {i:03d} entry: value ok\n"  # 24 characters
    return (line * (tokens * 4 // len(line) + 1))[: tokens * 4]


def _claude(kind: str, uuid: str, parent: str | None, second: int, version: str, **more: object) -> dict:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/work/shop",
            "sessionId": "cc-compact", "version": version, "gitBranch": "main", "type": kind, "uuid": uuid,
            "timestamp": stamp(second), **more}


def claude_code_compaction(path: Path, version: str = "2.1.5", step: int = 20_000, prefix: int = 3_000,
                           before: int = 9, after: int = 3, tools: bool = False) -> Path:
    """`before` turns, an auto compact_boundary (preTokens: the last response's total), then `after` turns.

    With `tools`, each turn's text comes back as a tool result (a read of a log file) instead of a paste.
    """
    model = "claude-sonnet-4-5-20250929"
    lines: list[dict] = []
    parent = None
    prompt = prefix
    second = 0

    def turn(i: int, text_tokens: int) -> None:
        nonlocal parent, prompt, second
        u, a = f"u{i}", f"a{i}"
        second += 20
        if tools and i > 1:
            call = f"toolu_{i}"
            lines.append(_claude("assistant", f"c{i}", parent, second - 10, version, requestId=f"req_c{i}", message={
                "model": model, "id": f"msg_c{i}", "type": "message", "role": "assistant", "stop_reason": "tool_use",
                "content": [{"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": f"log{i}.txt"}}],
                "usage": {"input_tokens": 10, "cache_creation_input_tokens": prompt - 10,
                          "cache_read_input_tokens": 0, "output_tokens": 20}}))
            prompt += 40
            lines.append(_claude("user", u, f"c{i}", second, version, message={"role": "user", "content": [
                {"tool_use_id": call, "type": "tool_result", "content": paste(i, text_tokens)}]}))
        else:
            lines.append(_claude("user", u, parent, second, version,
                                 message={"role": "user", "content": paste(i, text_tokens)}))
        prompt += text_tokens
        second += 5
        usage = {"input_tokens": 10, "cache_creation_input_tokens": prompt - 10, "cache_read_input_tokens": 0,
                 "cache_creation": {"ephemeral_5m_input_tokens": prompt - 10, "ephemeral_1h_input_tokens": 0},
                 "output_tokens": 20, "service_tier": "standard"}
        lines.append(_claude("assistant", a, u, second, version, requestId=f"req_{i}", message={
            "model": model, "id": f"msg_{i}", "type": "message", "role": "assistant", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": f"noted part {i}"}], "usage": usage}))
        prompt += 8  # the reply
        parent = a

    for i in range(1, before + 1):
        turn(i, step if i > 1 else 100)
    pre = prompt - 8 + 20  # the last request's prompt and output
    second += 30
    lines.append(_claude("system", "cb", None, second, version, subtype="compact_boundary",
                         content="Conversation compacted", logicalParentUuid=parent,
                         compactMetadata={"trigger": "auto", "preTokens": pre}))
    lines.append(_claude("user", "cs", "cb", second + 1, version, isCompactSummary=True, message={
        "role": "user", "content": "This session is being continued from a previous conversation. Summary: "
                                   "the user pasted logs; all values were ok."}))
    parent = "cs"
    prompt = prefix + 40
    for i in range(before + 1, before + after + 1):
        turn(i, step)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def codex_compaction(path: Path, version: str = "0.104.0", step: int = 25_000, prefix: int = 5_000,
                     before: int = 10, after: int = 3, window: int = 272_000) -> Path:
    """A Codex rollout: `before` turns, a `compacted` item and context_compacted, then `after` turns."""
    lines: list[dict] = []
    second = 0

    def line(kind: str, payload: dict) -> None:
        lines.append({"timestamp": stamp(second), "type": kind, "payload": payload})

    line("session_meta", {"id": "codex-compact", "timestamp": stamp(0), "cwd": "/work/shop",
                          "originator": "codex_cli_rs", "cli_version": version, "instructions": None})
    total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0,
             "total_tokens": 0}
    prompt = prefix

    def turn(i: int) -> None:
        nonlocal second, prompt
        second += 20
        size = step if i > 1 else 100
        text = paste(i, size)
        line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        line("event_msg", {"type": "user_message", "message": text, "images": []})
        line("turn_context", {"cwd": "/work/shop", "approval_policy": "on-request",
                              "sandbox_policy": {"mode": "read-only"}, "model": "gpt-5.3-codex", "effort": "medium",
                              "summary": "auto"})
        prompt += size
        second += 5
        last = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 20, "reasoning_output_tokens": 0,
                "total_tokens": prompt + 20}
        for key in total:
            total[key] += last[key]
        line("event_msg", {"type": "token_count", "info": {"total_token_usage": dict(total),
                                                           "last_token_usage": last, "model_context_window": window},
                           "rate_limits": None})
        line("response_item", {"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": f"noted part {i}"}]})
        prompt += 8

    for i in range(1, before + 1):
        turn(i)
    second += 30
    line("compacted", {"message": "Summary: the user pasted logs; all values were ok."})
    line("event_msg", {"type": "context_compacted"})
    prompt = prefix + 40
    for i in range(before + 1, before + after + 1):
        turn(i)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path
