"""The `ctxkit` preset on a seed-000-style session: a 60-turn hunt for a BRL rounding bug.

Seed 000 prints, for its own 60-turn billing session, the manager's events (clearing at request
12, 18, 24, ... and one compaction after a clearing that was not enough) and the facts still in the
managed context at the end: the task ("keep USD behavior unchanged"), the decisions of turns 8, 16
and 35 (ROUND_HALF_EVEN, never float, format_money()), the user's aside at turn 20 (3 decimals for
BRL), the TypeError of turn 13, the file src/billing/tax.py and the open TODO (run the full suite).
The session here is built in the test with the same facts at the same turns.
"""

from __future__ import annotations

from helpers import T0, Capture, SpecStages

from ctxsim.model import Message, Session, ToolCall, Trace, format_ts
from ctxsim.policies import parse_policy
from ctxsim.presets import Preset, presets
from ctxsim.replay.engine import PolicyRun, Replayer, Setup
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import MessageSizer

TASK = ("Invoice totals in BRL are sometimes off by one cent. Find the cause, fix it, add regression tests, "
        "and keep USD behavior unchanged.")
ASIDE = "Also check the CSV export, finance says it shows 3 decimals for BRL."
TYPE_ERROR = "TypeError: unsupported operand type(s) for *: 'float' and 'decimal.Decimal'"
MARKS = {
    8: "DECISION: round once, at the invoice total, with ROUND_HALF_EVEN in src/billing/money.py",
    10: "TODO: add a BRL regression test",
    16: "DECISION: tax rates load as Decimal from strings, never float",
    27: "DONE: add a BRL regression test",
    35: "DECISION: export formats money with format_money(), never str(Decimal)",
    40: "TODO: run the full suite and summarize the change for the PR",
}
FILES = ("src/billing/invoice.py", "src/billing/money.py", "src/billing/currency.py", "src/billing/export.py",
         "tests/test_invoice.py", "tests/test_money.py", "tests/test_export.py")
FACTS = {
    "task": "keep USD behavior unchanged",
    "decision t8": "ROUND_HALF_EVEN",
    "decision t16": "never float",
    "decision t35": "format_money()",
    "user t20": "3 decimals for BRL",
    "error t13": "TypeError: unsupported operand",
    "file": "src/billing/tax.py",
    "open task": "TODO: run the full suite",
}


def _call(t: int) -> tuple[str, dict]:
    if t == 13:
        return "run_tests", {"path": "tests/test_invoice.py"}
    if t in (5, 42):
        return "read_file", {"path": "src/billing/tax.py"}
    if t in (25, 36):
        return "notes_write", {"section": "Decisions", "entry": MARKS[8 if t == 25 else 35].removeprefix("DECISION: ")}
    if t == 45:
        return "notes_read", {}
    return ("read_file", "run_tests", "edit_file")[t % 3], {"path": FILES[t % len(FILES)]}


def _output(t: int, tool: str, args: dict) -> str:
    if tool == "notes_write":
        return "ok"
    if tool == "notes_read":
        return "## Decisions\n- round once at the total, ROUND_HALF_EVEN\n- export uses format_money()"
    lines = 140 if tool == "read_file" else 90
    body = "\n".join(f"{i:4d}  amount_{t}_{i} = quantize(Decimal(row[{i}]) * rate_{i % 7}, CENT)  # {args['path']}"
                     for i in range(lines))
    return body + ("\n" + TYPE_ERROR if t == 13 else "")


def billing_trace(turns: int = 60) -> Trace:
    messages: list[Message] = []
    for t in range(1, turns + 1):
        ts = T0 + 20 * t
        if t == 1:
            messages.append(Message("user", TASK, ts=format_ts(ts)))
        if t == 20:
            messages.append(Message("user", ASIDE, ts=format_ts(ts)))
        tool, args = _call(t)
        prose = " ".join(f"Step {t}.{k}: the totals are summed per line and rounded again at the end, which drifts."
                         for k in range(14))
        text = prose + ("\n" + MARKS[t] if t in MARKS else "")
        messages.append(Message("assistant", text, ts=format_ts(ts + 1), tool_calls=(ToolCall(f"c{t}", tool, args),)))
        messages.append(Message("tool", _output(t, tool, args), ts=format_ts(ts + 2), tool_call_id=f"c{t}", name=tool))
    messages.append(Message("assistant", "All green; writing the PR summary.", ts=format_ts(T0 + 20 * (turns + 1))))
    system = "You are a coding agent. Write DECISION:, TODO: and DONE: lines for what you decide and plan."
    return Trace("billing", (Session(id="billing-bug", system=system, messages=tuple(messages)),))


def run_preset(preset: Preset, trace: Trace, capture: Capture | None = None, policy=None) -> PolicyRun:
    sizer = MessageSizer(TokenCounter(get_tokenizer(preset.tokenizer or "o200k_base")), preset.framing)
    setup = Setup(provider=preset.provider, model=preset.model, cache=preset.cache, pin_tools=preset.pin_tools,
                  window=preset.window)
    return Replayer(trace, sizer, setup).run(policy or SpecStages(preset.name, preset.stages, capture))


def context_text(history) -> str:
    parts = []
    for item in history.items:
        parts.append(item.message.content)
        parts += [f"{c.name} {c.arguments}" for c in item.message.tool_calls]
    return "\n".join(parts)


def test_preset_is_seed_000():
    preset = presets()["ctxkit"]
    stages = [parse_policy(s) for s in preset.stages]
    assert [s.name for s in stages] == ["notes", "clear", "compact"]
    notes, clear, compact = (s.params for s in stages)
    # Seed 000's Budget: trigger 30,000, clear_at_least 10,000, keep 3, compact_above 20,000, keep_recent 10.
    assert (clear.trigger, clear.keep, clear.clear_at_least, clear.exclude_tools) == \
        (30_000, 3, 10_000, ("notes_read",))
    assert (compact.trigger, compact.compact_above, compact.keep_recent, compact.clear_at_least, compact.summarizer) \
        == (30_000, 20_000, 10, 10_000, "extractive")
    assert notes.max_tokens == 1_500  # NotesFile(max_tokens=1_500)
    assert preset.pin_tools == ("notes_read",) and preset.tokenizer == "o200k_base"
    assert preset.cache == "prefix:writes=true,min_tokens=1024"
    assert (preset.provider, preset.model) == ("anthropic", "claude-sonnet-4-5")


def test_framing_matches_seed_000_per_message_count():
    """Seed 000: a message costs count_tokens(content) + 4; so does the system prompt."""
    preset = presets()["ctxkit"]
    counter = TokenCounter(get_tokenizer("o200k_base"))
    sizer = MessageSizer(counter, preset.framing)
    text = "Invoice totals in BRL are sometimes off by one cent."
    for role in ("user", "tool", "summary", "assistant"):
        message = Message(role, text, name="read_file" if role == "tool" else None)
        assert sizer.message(message) == counter.count(text) + 4
    assert sizer.system(Session(system=text)) == counter.count(text) + 4
    # A structured tool call adds nothing: seed 000 keeps the call off the message's text.
    call = ToolCall("c1", "read_file", {"path": "src/billing/tax.py"})
    with_call = sizer.message(Message("assistant", text, tool_calls=(call,)))
    assert with_call == counter.count(text) + 4


def test_clearing_first_then_compaction_only_when_clearing_is_not_enough():
    preset = presets()["ctxkit"]
    run = run_preset(preset, billing_trace())
    acts = [e for e in run.events if e.kind not in ("threshold", "overflow")]
    kinds = [e.kind for e in acts]
    assert set(kinds) == {"clear", "compact"}
    assert kinds[0] == "clear" and kinds.index("compact") > 0
    first = acts[0]
    # Clearing keeps the newest 3 results; notes_read (turn 45) is not among the first results, so the first
    # clearing, at request r, stubs the results of turns 1..r-1 except the newest 3.
    assert first.note == f"cleared {first.request - 1 - 3} tool results"
    assert first.tokens_before > 30_000 and first.freed_tokens >= 10_000
    for e in acts:
        if e.kind == "clear":
            assert e.freed_tokens >= 10_000  # clear_at_least
        else:
            # Compaction runs on what clearing left: still above compact_above (and the trigger, as the engine
            # checks it today on the prompt after clearing).
            assert e.tokens_before > 20_000 and e.note.startswith("compacted ")
    compactions = [e for e in acts if e.kind == "compact"]
    clears_alone = {e.request for e in acts if e.kind == "clear"} - {e.request for e in compactions}
    assert clears_alone, "most requests that pass the trigger are handled by clearing alone"
    # ctxkit's extractive summarizer runs offline: a compaction makes no model request to meter.
    assert compactions and not [r for r in run.rows if r.kind == "summarize"]


def test_seed_facts_survive_in_the_managed_context():
    preset = presets()["ctxkit"]
    capture = Capture()
    run = run_preset(preset, billing_trace(), capture)
    assert any(e.kind == "compact" for e in run.events), "the scenario must compact for this test to mean anything"
    text = context_text(capture.history)
    missing = [name for name, fact in FACTS.items() if fact not in text]
    assert not missing, f"facts lost: {missing}"
    # The early facts survive through the summary, not through raw messages.
    summary = next(i.message.content for i in capture.history.items if i.message.role == "summary")
    for fact in ("keep USD behavior unchanged", "ROUND_HALF_EVEN", "never float", "3 decimals for BRL",
                 "TypeError: unsupported operand"):
        assert fact in summary
    assert "USER: (turn 20) " + ASIDE in summary
    assert "TODO: add a BRL regression test" not in summary  # closed by DONE at turn 27
    # The notes file written at turn 25 is appended to the summary (seed 000's "Current notes:").
    assert "Current notes:\n## Decisions\n- round once, at the invoice total" in summary
    # The notes_read result of turn 45 is pinned and still there, untouched.
    reads = [i for i in capture.history.items if i.message.name == "notes_read" and i.message.role == "tool"]
    assert len(reads) == 1 and reads[0].pinned and not reads[0].cleared


def test_managed_context_stays_small_and_costs_less():
    preset = presets()["ctxkit"]
    trace = billing_trace()
    managed = run_preset(preset, trace)
    naive = run_preset(preset, trace, policy=parse_policy("none"))
    requests = [r for r in managed.rows if r.kind == "request"]
    assert len(requests) == len(naive.rows) == 61
    # Seed 000: naive peaks at 212,592 tokens, managed at 36,936; this session is sized alike.
    assert max(r.input_tokens for r in naive.rows) > 200_000
    assert max(r.input_tokens for r in requests) < 40_000
    assert sum(r.cost_usd for r in managed.rows) < sum(r.cost_usd for r in naive.rows)


def test_deterministic():
    preset = presets()["ctxkit"]
    a, b = run_preset(preset, billing_trace()), run_preset(preset, billing_trace())
    assert a.rows == b.rows and a.events == b.events
