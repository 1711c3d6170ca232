"""Issue 25: a session the product compacted, replayed as if it had not, never "fits" where its recorded
growth says it would have passed the window.

A Codex rollout whose log holds little of what was sent (every user message is 10 tokens in the log, the
bill grows by 26,000 a turn: redacted or attached content), compacted by hand early (after request 4, at
~83k of a 272k window), then 8 more turns. Without the compaction the conversation would have grown to
~5,100 + 11 x 26,000 = ~291k tokens: past the window. The preset check replays the two parts joined; the
growth the calibration re-anchored on the part after the compaction must come with its messages.
"""

from __future__ import annotations

import json
from pathlib import Path

from recorded_fixtures import stamp

from ctxsim.analysis import preset_check
from ctxsim.formats import read_traces

STEP = 26_000  # billed tokens a turn, the log holds 10 of them
PREFIX = 5_000
WINDOW = 272_000


def hidden_growth_rollout(path: Path, before: int = 4, after: int = 8) -> Path:
    lines: list[dict] = []
    second = 0

    def line(kind: str, payload: dict) -> None:
        lines.append({"timestamp": stamp(second), "type": kind, "payload": payload})

    line("session_meta", {"id": "codex-hidden", "timestamp": stamp(0), "cwd": "/work/shop",
                          "originator": "codex_cli_rs", "cli_version": "0.104.0", "instructions": None})
    total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0,
             "total_tokens": 0}
    prompt = PREFIX

    def turn(i: int) -> None:
        nonlocal second, prompt
        second += 20
        text = f"part {i:03d} see attached log ok"  # 40 characters: 10 chars4 tokens
        line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        line("event_msg", {"type": "user_message", "message": text, "images": []})
        line("turn_context", {"cwd": "/work/shop", "approval_policy": "on-request",
                              "sandbox_policy": {"mode": "read-only"}, "model": "gpt-5.3-codex", "effort": "medium",
                              "summary": "auto"})
        prompt += STEP if i > 1 else 100
        second += 5
        last = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 20, "reasoning_output_tokens": 0,
                "total_tokens": prompt + 20}
        for key in total:
            total[key] += last[key]
        line("event_msg", {"type": "token_count", "info": {"total_token_usage": dict(total),
                                                           "last_token_usage": last, "model_context_window": WINDOW},
                           "rate_limits": None})
        line("response_item", {"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": f"noted part {i}"}]})
        prompt += 8

    for i in range(1, before + 1):
        turn(i)
    second += 30
    line("compacted", {"message": "Summary: the user attached logs; all values were ok."})
    line("event_msg", {"type": "context_compacted"})
    prompt = PREFIX + 40
    for i in range(before + 1, before + after + 1):
        turn(i)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_the_replay_without_the_compaction_carries_the_growth_the_log_misses(tmp_path: Path) -> None:
    trace = read_traces([str(hidden_growth_rollout(tmp_path / "hidden.jsonl"))])
    (check,) = preset_check.check(trace, "chars4")
    assert check.calibrated and check.recorded_request == 5  # compacted by hand before request 5, at ~83k
    # joined, the conversation passes Codex's threshold (a share of the 272k window): request 4's ~83k plus 26k
    # for each later turn but the first after the compaction (its growth sits in that part's own prefix, which
    # the joined replay does not take): request 5 + n sends ~83k + n x 26k; the threshold fires after the first
    # such request past it and the preset, which checks the prompt about to be sent, compacts before it
    n = next(k for k in range(1, 20) if check.replayed_tokens + k * STEP > check.threshold_tokens)
    assert check.threshold_request == 5 + n + 1 and check.preset_request == 5 + n
    assert check.preset_prompt_tokens is not None and abs(check.preset_prompt_tokens - (83_124 + n * STEP)) < 200
    assert "never passed" not in check.verdict
