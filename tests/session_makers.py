"""Small hand-made sessions in the products' own formats, for the accounting, discovery and cache-break
tests: each request is a `Step` (its time, model and recorded usage), written the way the product
writes it. Invented for these tests; nothing is copied from a real transcript."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

SONNET = "claude-sonnet-4-5-20250929"
# claude-sonnet-4-5 per million tokens (prompts under 200k): input, 5m write, 1h write, read, output
SONNET_USD = {"input": Decimal(3), "w5": Decimal("3.75"), "w1h": Decimal(6), "read": Decimal("0.30"),
              "output": Decimal(15)}


@dataclass
class Step:
    t: float  # unix seconds
    uncached: int = 1000  # Anthropic: input_tokens (exclusive of the cache)
    read: int = 0
    w5: int = 0
    w1h: int = 0
    out: int = 50
    model: str = SONNET
    thinking: bool = False
    compact_before: bool = False
    microcompact_before: bool = False

    @property
    def prompt(self) -> int:
        return self.uncached + self.read + self.w5 + self.w1h

    def sonnet_usd(self) -> Decimal:
        p = SONNET_USD
        return (self.uncached * p["input"] + self.w5 * p["w5"] + self.w1h * p["w1h"] + self.read * p["read"]
                + self.out * p["output"]) / Decimal(1_000_000)


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def unix(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def claude_code(path: Path, sid: str, cwd: str, steps: list[Step]) -> Path:
    lines: list[dict] = []
    parent: str | None = None

    def env(kind: str, uuid: str, t: float, **more: object) -> dict:
        nonlocal parent
        line = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": sid,
                "version": "2.1.1", "gitBranch": "main", "type": kind, "uuid": uuid, "timestamp": iso(t), **more}
        parent = uuid
        return line

    for i, s in enumerate(steps):
        if s.compact_before:
            lines.append(env("system", f"c{i}", s.t - 2, subtype="compact_boundary", content="Conversation compacted",
                             compactMetadata={"trigger": "auto", "preTokens": 50_000}))
            lines.append(env("user", f"cs{i}", s.t - 1.5, isCompactSummary=True, isVisibleInTranscriptOnly=True,
                             message={"role": "user", "content": "This session is being continued. Summary."}))
        if s.microcompact_before:
            lines.append(env("system", f"mc{i}", s.t - 2, subtype="microcompact_boundary", content="Microcompacted",
                             microcompactMetadata={"trigger": "auto", "preTokens": 40_000, "tokensSaved": 9_000}))
        lines.append(env("user", f"u{i}", s.t - 1, message={"role": "user", "content": f"step {i}: go on"}))
        content: list[dict] = []
        if s.thinking:
            content.append({"type": "thinking", "thinking": "Think it through.", "signature": "sig"})
        content.append({"type": "text", "text": f"done {i}"})
        usage = {"input_tokens": s.uncached, "cache_creation_input_tokens": s.w5 + s.w1h,
                 "cache_read_input_tokens": s.read,
                 "cache_creation": {"ephemeral_5m_input_tokens": s.w5, "ephemeral_1h_input_tokens": s.w1h},
                 "output_tokens": s.out, "service_tier": "standard"}
        lines.append(env("assistant", f"a{i}", s.t, requestId=f"req_{sid}_{i}", message={
            "model": s.model, "id": f"msg_{sid}_{i}", "type": "message", "role": "assistant", "content": content,
            "stop_reason": "end_turn", "usage": usage}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def codex(path: Path, sid: str, cwd: str, steps: list[Step], model: str = "gpt-5-codex") -> Path:
    """A Codex rollout: `uncached + read` is the (inclusive) input, `read` the cached part."""
    lines: list[dict] = []

    def line(t: float, kind: str, payload: dict) -> None:
        lines.append({"timestamp": iso(t), "type": kind, "payload": payload})

    start = steps[0].t - 5
    line(start, "session_meta", {"id": sid, "timestamp": iso(start), "cwd": cwd, "originator": "codex_cli_rs",
                                 "cli_version": "0.46.0"})
    total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0,
             "total_tokens": 0}
    for i, s in enumerate(steps):
        line(s.t - 1, "response_item", {"type": "message", "role": "user",
                                        "content": [{"type": "input_text", "text": f"step {i}"}]})
        line(s.t - 1, "turn_context", {"cwd": cwd, "approval_policy": "never", "model": model,
                                       "sandbox_policy": {"mode": "read-only"}, "summary": "auto"})
        last = {"input_tokens": s.uncached + s.read, "cached_input_tokens": s.read, "output_tokens": s.out,
                "reasoning_output_tokens": 0, "total_tokens": s.uncached + s.read + s.out}
        total = {k: total[k] + last[k] for k in total}
        line(s.t, "event_msg", {"type": "token_count", "info": {"total_token_usage": dict(total),
                                                                "last_token_usage": last,
                                                                "model_context_window": 272000}})
        line(s.t, "response_item", {"type": "message", "role": "assistant",
                                    "content": [{"type": "output_text", "text": f"done {i}"}]})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def gemini(path: Path, sid: str, project_hash: str, steps: list[Step], model: str = "gemini-2.5-pro") -> Path:
    """A Gemini CLI chat (one JSON document): `uncached + read` is the input, `read` the cached part."""
    messages: list[dict] = []
    for i, s in enumerate(steps):
        messages.append({"id": f"u{i}", "timestamp": iso(s.t - 1), "type": "user", "content": f"step {i}"})
        messages.append({"id": f"g{i}", "timestamp": iso(s.t), "type": "gemini", "content": f"done {i}",
                         "thoughts": [], "model": model,
                         "tokens": {"input": s.uncached + s.read, "output": s.out, "cached": s.read, "thoughts": 0,
                                    "tool": 0, "total": s.uncached + s.read + s.out}})
    doc = {"sessionId": sid, "projectHash": project_hash, "startTime": iso(steps[0].t - 1),
           "lastUpdated": iso(steps[-1].t), "messages": messages}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path
