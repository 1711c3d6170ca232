"""Issue 17, the prompt-size half: a log that lacks content re-anchors, short sessions fit one slope, the
provider's reasoning rule follows each request's model and survives a stage that drops messages.

Counted with chars4 (a token is 4 characters, rounded up); every recorded prompt is made by hand from a
stated rule, so fitted values, anchors and prompts are checked exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

from ctxsim.analysis.calibrate import BASE_FRAMING, calibration, with_provider_rules
from ctxsim.analysis.validate import validate
from ctxsim.formats import read_traces
from ctxsim.model import Message, Session, Trace, Usage, format_ts
from ctxsim.policies import Stages, parse_policy
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import Framing, MessageSizer

T0 = 1_768_323_360.0  # 2026-01-13T16:56:00Z
PREFIX = 3_000


def counter() -> TokenCounter:
    return TokenCounter(get_tokenizer("chars4"))


def prompts(trace: Trace, policy: str, framing: Framing, setup: Setup, provider: str, model: str) -> list[int]:
    replayer = Replayer(trace, MessageSizer(counter(), framing), setup)
    run = replayer.run(with_provider_rules(parse_policy(policy), provider, model)[0])
    return [r.input_tokens for r in run.rows if r.kind == "request"]


# ---------------------------------------------------------------- a log that lacks content

HIDDEN = 2_000  # tokens of request 4's user message the log does not hold (redacted, an attachment)


def lacking_trace(hidden_in_log: bool = False) -> Trace:
    """Six turns on an OpenAI model: a 10-token user message, a 5-token answer. Every message is billed at
    its text + 4 (the chars4 prior: scale 1.0, overhead 4). User message 4 carried 2,000 more tokens than
    the log holds; with `hidden_in_log` the log holds them (the truth the anchored replay stands for)."""
    messages = []
    billed = PREFIX
    for k in range(1, 7):
        text = "abcd" * 10 + ("wxyz" * HIDDEN if hidden_in_log and k == 4 else "")
        messages.append(Message("user", text, ts=format_ts(T0 + 60 * k)))
        billed += 10 + 4 + (HIDDEN if k == 4 else 0)
        messages.append(Message("assistant", "efgh" * 5, ts=format_ts(T0 + 60 * k + 5),
                                usage=Usage(billed, 0, 0, 0, 5)))
        billed += 5 + 4
    return Trace("lacking", (Session(id="l", source="synthetic", model="gpt-4.1", provider="openai",
                                     messages=tuple(messages)),))


def test_a_log_lacking_content_re_anchors_and_reports_the_missing_tokens():
    cal = calibration(lacking_trace(), "chars4")
    # request 4's bill grew by 2,023 where the log's new messages explain 23 (1.0 x (15 + 4 x 2)): re-anchored
    assert [(a.request, a.tokens, a.reason) for a in cal.anchors] == [(4, HIDDEN, "unexplained growth")]
    # spread over what arrived since request 3 (its answer, 9 tokens framed, and user message 4, 14):
    # 2000 x 9/23 = 782.6 and 2000 x 14/23 = 1217.4, the remainder to the larger fraction
    assert cal.anchors[0].spread == (5, 6)
    applied = cal.apply(lacking_trace(), counter())
    assert [applied.sessions[0].messages[i].extra.get("anchor_tokens") for i in (5, 6)] == [783, 1217]
    assert (cal.scale, cal.message_tokens, cal.session_prefix_tokens) == (1.0, 4, {"l": PREFIX})
    # the anchored request only anchors its segment: the fit runs on the differences inside [1-3] and [4-6]
    assert cal.requests_used == 6 and cal.requests_excluded == 0
    report = cal.missing_report
    assert report["missing_tokens"] == HIDDEN
    assert report["by_reason"] == {"unexplained growth": {"anchors": 1, "tokens": HIDDEN}}
    result = validate(lacking_trace(), "chars4", calibration=cal)
    assert [c.simulated_input_tokens for c in result.checks] == [c.recorded_input_tokens for c in result.checks]
    assert [c.anchor_tokens for c in result.checks] == [0, 0, 0, HIDDEN, 0, 0]


def test_a_policy_that_drops_the_anchored_messages_saves_the_anchored_size():
    cal = calibration(lacking_trace(), "chars4")
    anchored = prompts(cal.apply(lacking_trace(), counter()), "recent:keep_first=1,keep_last=2", cal.framing(),
                       cal.setup(), "openai", "gpt-4.1")
    truth = prompts(lacking_trace(hidden_in_log=True), "recent:keep_first=1,keep_last=2", cal.framing(),
                    cal.setup(), "openai", "gpt-4.1")
    # recent keeps user 1 and the newest two: requests 5 and 6 drop answer 3 and user 4, all 2,000 with them
    assert anchored == truth
    kept = prompts(cal.apply(lacking_trace(), counter()), "none", cal.framing(), cal.setup(), "openai", "gpt-4.1")
    # request 5 dropped answers 1-3 (9 each) and users 2-4 (14 each), request 6 answers 1-4 and users 2-5
    assert [k - a for k, a in zip(kept, anchored, strict=True)][4:] == [HIDDEN + 3 * 9 + 3 * 14,
                                                                       HIDDEN + 4 * 9 + 4 * 14]


# ---------------------------------------------------------------- a short session fits one slope


def short_trace() -> Trace:
    """Three requests, every message billed at its text + 20 (scale 1.0, overhead 20): prompts P + 120,
    P + 200 (+ answer 10 + 20, user 30 + 20), P + 450 (+ answer 10 + 20, user 200 + 20)."""
    texts = [("user", 100), ("assistant", 10), ("user", 30), ("assistant", 10), ("user", 200), ("assistant", 10)]
    billed = [PREFIX + 120, PREFIX + 200, PREFIX + 450]
    messages = []
    request = 0
    for i, (role, tokens) in enumerate(texts):
        usage = None
        if role == "assistant":
            usage = Usage(billed[request], 0, 0, 0, tokens)
            request += 1
        messages.append(Message(role, "abcd" * tokens, ts=format_ts(T0 + 10 * i), usage=usage))  # type: ignore[arg-type]
    return Trace("short", (Session(id="s", source="synthetic", model="mistral-small-latest", provider="mistral",
                                   messages=tuple(messages)),))


def test_a_three_request_session_fits_the_overhead_with_the_scale_from_the_prior():
    cal = calibration(short_trace(), "chars4")
    # 3 requests in one segment leave one difference too few for both slopes: the overhead alone, at the
    # prior's scale 1.0, explains both steps exactly ((30 + 10) + 2 x 20 = 80, (200 + 10) + 2 x 20 = 250);
    # the scale alone at the prior's overhead 4 cannot (48 -> 80 and 218 -> 250 are not one ratio)
    assert cal.source == "fit+prior scale" and cal.scale == 1.0 and cal.message_tokens == 20
    assert "kept at the prior" in (cal.fallback_reason or "")
    assert cal.session_prefix_tokens == {"s": PREFIX}
    result = validate(short_trace(), "chars4", calibration=cal)
    assert [c.simulated_input_tokens for c in result.checks] == [PREFIX + 120, PREFIX + 200, PREFIX + 450]
    priors = calibration(short_trace(), "chars4", mode="priors")
    assert (priors.scale, priors.message_tokens) == (1.0, 4)  # what the fit replaced


# ---------------------------------------------------------------- the provider rule, per session's model


def thinking_session(sid: str, model: str, thinking_kept: bool, agent: bool = False) -> Session:
    """Three turns: user 100 tokens, a response with 50 tokens of thinking and a 10-token answer. Billed at
    text alone (framing 0, scale 1): with `thinking_kept` every earlier response's thinking too."""
    messages = []
    sent = 0
    for k in range(1, 4):
        messages.append(Message("user", "abcd" * 100, ts=format_ts(T0 + 60 * k)))
        sent += 100
        messages.append(Message("assistant", "wxyz" * 10, ts=format_ts(T0 + 60 * k + 5), thinking="t" * 200,
                                model=model, usage=Usage(PREFIX + sent, 0, 0, 0, 60)))
        sent += 10 + (50 if thinking_kept else 0)
    extra = {"agent_id": sid} if agent else {}
    return Session(id=sid, source="claude-code", model=model, provider="anthropic", messages=tuple(messages),
                   extra=extra)


def two_model_trace() -> Trace:
    """A main agent on Opus 4.5 (keeps earlier turns' thinking) and a subagent on Haiku 4.5 (strips it)."""
    return Trace("two", (thinking_session("main", "claude-opus-4-5-20251101", True),
                         thinking_session("main/agent-a", "claude-haiku-4-5-20251001", False, agent=True)))


def test_the_provider_rule_follows_each_sessions_model():
    trace = two_model_trace()
    replayer = Replayer(trace, MessageSizer(counter(), BASE_FRAMING), Setup(provider_rules=True))
    rows = [r.input_tokens for r in replayer.run(parse_policy("none")).rows if r.kind == "request"]
    # main: 100, 100 + 60 + 100, + 60 + 100 (thinking kept); subagent: 100, + 10 + 100, + 10 + 100
    assert rows == [100, 260, 420, 100, 210, 320]
    # the calibration replays the same prompt and fits it exactly, both sessions at once
    cal = calibration(trace, "chars4")
    result = validate(trace, "chars4", calibration=cal)
    assert [c.simulated_input_tokens for c in result.checks] == [c.recorded_input_tokens for c in result.checks]
    assert result.rules and "dropped" in result.rules[0]
    # a forced model governs every request: Opus 4.6 forced, nothing is dropped in either session
    forced = Replayer(trace, MessageSizer(counter(), BASE_FRAMING),
                      Setup(provider_rules=True, model="claude-opus-4-6"))
    assert [r.input_tokens for r in forced.run(parse_policy("none")).rows if r.kind == "request"] == [
        100, 260, 420, 100, 260, 420]


# ---------------------------------------------------------------- the provider rule after a dropping stage


def bursty_session() -> Session:
    """Eight turns of 1-4 user messages (20 tokens each) then a response with 30 tokens of thinking and a
    5-token answer, on Sonnet 4.5 (strips earlier thinking): the history grows by uneven steps."""
    messages = []
    burst = [1, 4, 1, 3, 4, 1, 2, 4]
    for k, n in enumerate(burst):
        for j in range(n):
            messages.append(Message("user", "abcd" * 20, ts=format_ts(T0 + 60 * k + j)))
        messages.append(Message("assistant", "wxyz" * 5, ts=format_ts(T0 + 60 * k + 30), thinking="t" * 120,
                                model="claude-sonnet-4-5"))
    return Session(id="b", source="synthetic", model="claude-sonnet-4-5", provider="anthropic",
                   messages=tuple(messages))


def reference_prompts(session: Session, keep_first: int, keep_last: int) -> list[int]:
    """The provider's rule then `recent` by their definitions: at each request every response before the
    latest user message loses its thinking, then the middle of the history is dropped."""
    sizer = MessageSizer(counter(), BASE_FRAMING)
    history: list[Message] = []
    out = []
    for message in session.messages:
        if message.role != "assistant":
            history.append(message)
            continue
        last_user = max(i for i, m in enumerate(history) if m.role == "user")
        history = [Message(m.role, m.content, ts=m.ts, model=m.model) if m.role == "assistant" and i < last_user
                   else m for i, m in enumerate(history)]
        if len(history) > keep_first + keep_last:
            history = history[:keep_first] + history[-keep_last:]
        out.append(sum(sizer.message(m) for m in history))
        history.append(message)
    return out


def test_the_provider_rule_drops_every_earlier_thinking_after_a_stage_that_dropped_messages():
    session = bursty_session()
    trace = Trace("bursty", (session,))
    got = prompts(trace, "recent:keep_first=1,keep_last=5", BASE_FRAMING, Setup(), "anthropic", "claude-sonnet-4-5")
    assert got == reference_prompts(session, 1, 5)
    # recent dropped messages at some requests, and the thinking of 7 earlier responses went at user turns
    assert got != prompts(trace, "none", BASE_FRAMING, Setup(), "anthropic", "claude-sonnet-4-5")


# ---------------------------------------------------------------- a reader sizing what the model is sent


def test_openhands_sends_a_file_edit_as_the_editors_output_not_the_logged_diff(tmp_path: Path):
    diff = "--- /w/a.py\n+++ /w/a.py\n" + "".join(f"+line {i}\n" for i in range(100))
    usage = {"prompt_tokens": 900, "completion_tokens": 20}
    events: list[dict] = [{"id": 1, "timestamp": "2026-01-13T16:56:01", "source": "user",  # type: ignore[type-arg]
                           "action": "message", "args": {"content": "go"}}]
    extras = [  # before OpenHands PR 6671 (the editor's output beside the diff), after it, the LLM editor
        {"path": "/w/a.py", "prev_exist": False, "old_content": None, "new_content": "x", "impl_source": "oh_aci",
         "formatted_output_and_error": "File created successfully at: /w/a.py"},
        {"path": "/w/b.py", "prev_exist": False, "old_content": None, "new_content": "x", "impl_source": "oh_aci"},
        {"path": "/w/c.py", "prev_exist": False, "old_content": "", "new_content": "x",
         "impl_source": "llm_based_edit"},
    ]
    for k, extra in enumerate(extras):
        call = {"id": f"t{k}", "type": "function",
                "function": {"name": "str_replace_editor", "arguments": '{"command": "create"}'}}
        response = {"id": f"R{k}", "model": "anthropic/claude-sonnet-4-5", "usage": usage,
                    "choices": [{"message": {"role": "assistant", "content": "", "tool_calls": [call]}}]}
        meta = {"function_name": "str_replace_editor", "tool_call_id": f"t{k}", "model_response": response}
        events.append({"id": 10 * k + 2, "timestamp": "2026-01-13T16:56:02", "source": "agent", "action": "edit",
                       "tool_call_metadata": meta, "args": {"path": extra["path"]}})
        content = "File created successfully at: /w/b.py" if k == 1 else diff
        events.append({"id": 10 * k + 3, "timestamp": "2026-01-13T16:56:03", "source": "agent",
                       "observation": "edit", "cause": 10 * k + 2, "content": content, "extras": extra})
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    session = read_traces([str(path)]).sessions[0]
    assert [m.content for m in session.messages if m.role == "tool"] == [
        "File created successfully at: /w/a.py", "File created successfully at: /w/b.py",
        "[New file /w/c.py is created with the provided content.]\n"]


# ---------------------------------------------------------------- what a stub takes with it

def test_a_stub_takes_the_images_and_anchored_tokens_of_what_it_replaced() -> None:
    """A tool result carrying 1,000 image / anchored tokens (extra_tokens): `clear` stubs it and the request
    after the clearing is smaller by its text AND those 1,000; an assistant message keeps its own (its
    reasoning, which the provider rule, not a stub, drops)."""
    from tests.helpers import T0 as H0
    from tests.helpers import replay, session_of, turn_messages

    result = Message("tool", "x" * 400, tool_call_id="c1", name="read", extra_tokens=1_000)
    assert result.with_content("[cleared]").extra_tokens == 0
    assert Message("assistant", "a", extra_tokens=77).with_content("b").extra_tokens == 77

    def trace(extra: int) -> Trace:
        messages: list[Message] = []
        for n in range(1, 7):
            messages += turn_messages(n, "read", "y" * 4_000, H0 + 60 * n, user="go" if n == 1 else None)
        first = next(i for i, m in enumerate(messages) if m.role == "tool")
        messages[first] = Message("tool", "y" * 4_000, ts=messages[first].ts, tool_call_id="c1", name="read",
                                  extra_tokens=extra)
        return session_of(messages)

    spec = "clear:trigger=3000,keep=1,clear_at_least=1"
    plain = replay(trace(0), spec).events
    heavy = replay(trace(1_000), spec).events
    # chars4: each 4,000-character result is 1,000 tokens + 4 framing; a stub saves 977 of them. Plain, the
    # first clearing (request 4) takes two results; with 1,000 more on result 1 it comes at request 3 and
    # takes that one result alone: its text's 977 and the 1,000 that rode on it
    assert [(e.request, e.messages, e.freed_tokens) for e in plain][:1] == [(4, 2, 2 * 977)]
    assert [(e.request, e.messages, e.freed_tokens) for e in heavy][:1] == [(3, 1, 977 + 1_000)]


def test_the_reasoning_rule_leaves_a_session_with_no_reasoning_unobserved() -> None:
    """The rule follows the history only in a session whose responses carry reasoning: elsewhere the engine
    leaves it out of its observers (no call per change), and the replay is what it was."""
    from ctxsim.analysis.calibrate import ProviderReasoningRule

    plain = Session(id="p", model="claude-haiku-4-5", messages=(Message("user", "go"), Message("assistant", "ok")))
    thinking = Session(id="t", model="claude-haiku-4-5", messages=(
        Message("user", "go"), Message("assistant", "ok", thinking="let me see")))
    rule = ProviderReasoningRule("anthropic", "claude-haiku-4-5")
    rule.foresee(plain)
    assert rule.observing is False
    rule.foresee(thinking)
    assert rule.observing is True
    calls: list[int] = []

    class Counting(ProviderReasoningRule):
        def observe(self, removed, added):  # type: ignore[no-untyped-def]
            calls.append(len(added))
            super().observe(removed, added)

    trace = Trace("two", (plain, thinking))
    replayer = Replayer(trace, MessageSizer(counter(), Framing()), Setup())
    replayer.run(Stages("rule+none", (Counting("anthropic", "claude-haiku-4-5"), parse_policy("none"))))
    assert sum(calls) == len(thinking.messages)  # told of the thinking session's appends only
