"""The `ctxkit` preset against an independent re-implementation of seed 000's ContextManager and Meter.

The reference below follows seed 000's semantics step by step (its own code, written for this test):
a message costs count(content) + 4; before each request, past 30,000 tokens, stale tool results
become stubs unless that frees under 10,000 tokens, and if the context is still above 20,000 the
old part is summarised (keeping the newest 10 messages, never splitting a result from its call,
only when the old part holds 10,000 tokens or more); the meter reads the prefix shared with the
previous request (message by message) when it holds 1,024 tokens or more and writes the rest at
1.25x, at $3 / $15 per million. The summary text itself comes from ctxsim's extractive summarizer
(seed 000's ContextManager takes any summarizer), so the comparison is of the manager and meter.
ctxsim must give the same context size, cache read and cost at every request, and the same
events at the same requests.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import Decimal

from ctxsim.model import Message, Session, ToolCall, Trace
from ctxsim.policies.clear import STUBS
from ctxsim.policies.spec import resolve
from ctxsim.presets import presets
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.summarizers.extractive import ExtractiveSummarizer
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import MessageSizer

SYSTEM = ("You are a coding agent fixing a billing bug. Write DECISION:, TODO: and DONE: lines for what "
          "you decide, plan and finish.")
FIRST_ERROR = re.compile(r"\b[A-Z]\w*(?:Error|Exception): [^\n\]]+")
MTOK = Decimal(1_000_000)


def scenario(turns: int = 70) -> Trace:
    """A seed-style session: reads, test runs with errors, edits, asides, marker lines."""
    files = ["src/billing/invoice.py", "src/billing/tax.py", "src/billing/money.py", "tests/test_invoice.py"]
    messages: list[Message] = []
    for t in range(1, turns + 1):
        if t == 1:
            messages.append(Message("user", "Invoice totals in BRL are off by one cent. Keep USD unchanged."))
        elif t % 17 == 0:
            messages.append(Message("user", f"Also check the CSV export (aside at turn {t})."))
        tool = ("read_file", "run_tests", "edit_file")[t % 3]
        path = files[t % len(files)]
        text = f"Turn {t}: {tool} on {path}. " + " ".join(
            f"The rounding of line {t * 7 + k} depends on the currency precision." for k in range(12))
        if t % 8 == 0:
            text += f"\nDECISION: round once at the total (turn {t})"
        if t % 11 == 0:
            text += "\nTODO: run the full suite"
        call = ToolCall(f"t{t}", tool, {"path": path})
        messages.append(Message("assistant", text, tool_calls=(call,)))
        size = {"read_file": 420, "run_tests": 300, "edit_file": 6}[tool] + (t * 37) % 90
        body = "\n".join(f"{path}:{i}: amount = Decimal('{t}.{i:02d}') * rate  # line {i}" for i in range(size))
        if tool == "run_tests" and t % 2:
            body += "\nTypeError: unsupported operand type(s) for *: 'float' and 'decimal.Decimal'"
        messages.append(Message("tool", body, tool_call_id=f"t{t}", name=tool))
    return Trace("ctxkit-scenario", (Session(id="billing", system=SYSTEM, messages=tuple(messages),
                                             model="claude-sonnet-4-5", provider="anthropic"),))


@dataclass
class Entry:
    message: Message
    turn: int | None
    tokens: int
    cleared: bool = False


def seed_args(call: ToolCall) -> str:
    """Seed 000's `args` string for a recorded call (the mapping ctxsim/presets/ctxkit.py writes down):
    a string is itself; a dict of one string value is that value; anything else is its compact JSON (key
    order kept); at most 200 characters."""
    arguments = call.arguments
    if isinstance(arguments, str):
        return arguments[:200]
    if isinstance(arguments, dict) and len(arguments) == 1 and isinstance(next(iter(arguments.values())), str):
        return next(iter(arguments.values()))[:200]
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))[:200]


@dataclass
class Notes:
    """Seed 000's NotesFile, in memory: `section | entry` writes, refused past 1,500 tokens."""

    count: object
    sections: dict[str, list[str]] = field(default_factory=dict)

    def text(self) -> str:
        return "\n\n".join(f"## {name}\n" + "\n".join(f"- {e}" for e in items) for name, items in self.sections.items())

    def write(self, args: str) -> None:
        section, entry = args.split(" | ")
        before = {k: list(v) for k, v in self.sections.items()}
        self.sections.setdefault(section, []).append(entry)
        if self.count(self.text()) > 1_500:  # type: ignore[operator]
            self.sections = before


class Reference:
    """Seed 000's ContextManager (clear, then compact) and Meter, for one session."""

    def __init__(self, count, calls: dict[str, ToolCall]) -> None:
        self.count = count
        self.calls = calls
        self.system = Entry(Message("system", SYSTEM), None, count(SYSTEM) + 4)
        self.history: list[Entry] = []
        self.events: list[tuple[int, str, int]] = []
        self.previous: list[tuple[str, str]] = []
        self.rows: list[tuple[int, int, Decimal]] = []  # (context, cache read, cost)
        self.requests = 0
        self.notes = Notes(count)
        self.resummarised = 0  # compactions whose old part began with an earlier summary

    def size(self, message: Message) -> int:
        return self.count(message.content) + 4

    def total(self) -> int:
        return self.system.tokens + sum(e.tokens for e in self.history)

    def append(self, message: Message, turn: int | None) -> None:
        if message.role == "tool" and message.name == "notes_write":
            self.notes.write(seed_args(self.calls[message.tool_call_id]))
        self.history.append(Entry(message, turn, self.size(message)))

    def request(self, output_tokens: int) -> None:
        self.requests += 1
        if self.total() > 30_000:
            self.clear()
            if self.total() > 20_000:
                self.compact()
        self.meter(output_tokens)

    def clear(self) -> None:
        results = [i for i, e in enumerate(self.history)
                   if e.message.role == "tool" and not e.cleared and e.message.name != "notes_read"]
        stale = results[:-3]
        stubs = {}
        for i in stale:
            e = self.history[i]
            error = FIRST_ERROR.search(e.message.content)
            args = seed_args(self.calls[e.message.tool_call_id])
            text = STUBS["ctxkit"].format(tool=e.message.name, args=args,
                                          tokens=e.tokens, error=f" First error: {error.group(0)}" if error else "")
            stub = Message("tool", text, tool_call_id=e.message.tool_call_id, name=e.message.name)
            stubs[i] = Entry(stub, e.turn, self.size(stub), cleared=True)
        freed = sum(self.history[i].tokens - s.tokens for i, s in stubs.items())
        if freed < 10_000:
            return
        for i, s in stubs.items():
            self.history[i] = s
        self.events.append((self.requests, "clear", freed))

    def compact(self) -> None:
        cut = len(self.history) - 10
        if cut <= 0:  # fewer than keep_recent messages: nothing is old (the seed's slice would go negative)
            return
        while cut > 0 and self.history[cut].message.role == "tool":
            cut -= 1
        old, recent = self.history[:cut], self.history[cut:]
        if sum(e.tokens for e in old) < 10_000:
            return
        before = self.total()
        self.resummarised += old[0].message.role == "summary"
        text = ExtractiveSummarizer().summarize(
            [e.message for e in old], self.notes.text(), turns=[e.turn for e in old],
            calls={e.message.tool_call_id: self.calls[e.message.tool_call_id]
                   for e in old if e.message.role == "tool"})
        summary = Message("summary", text)
        self.history = [Entry(summary, None, self.size(summary)), *recent]
        self.events.append((self.requests, "compact", before - self.total()))

    def meter(self, output_tokens: int) -> None:
        entries = [self.system, *self.history]
        keys = [(e.message.role, e.message.content) for e in entries]
        shared = 0
        while shared < min(len(keys), len(self.previous)) and keys[shared] == self.previous[shared]:
            shared += 1
        read = sum(e.tokens for e in entries[:shared])
        read = read if read >= 1_024 else 0
        total = sum(e.tokens for e in entries)
        cost = (read * Decimal("0.30") + (total - read) * Decimal("3.75") + output_tokens * 15) / MTOK
        self.rows.append((total, read, cost))
        self.previous = keys


def reference_run(trace: Trace, count) -> Reference:
    session = trace.sessions[0]
    calls = {c.id: c for m in session.messages for c in m.tool_calls}
    ref = Reference(count, calls)
    turn = 0
    for message in session.messages:
        if message.role == "assistant":
            turn += 1
            ref.request(ref.size(message))
            ref.append(message, turn)
        else:
            ref.append(message, turn if message.role == "tool" else turn + 1)
    return ref


def ctxkit_run(trace: Trace):
    """The ctxkit preset's replay of `trace`, and its token counter."""
    preset = presets()["ctxkit"]
    counter = TokenCounter(get_tokenizer(preset.tokenizer))
    replayer = Replayer(trace, MessageSizer(counter, preset.framing),
                        Setup(cache=preset.cache, pin_tools=preset.pin_tools, provider=preset.provider,
                              model=preset.model))
    return replayer.run(resolve(["ctxkit"])[0].policy), counter


def test_ctxkit_preset_matches_seed_000_request_by_request():
    trace = scenario()
    run, counter = ctxkit_run(trace)
    ref = reference_run(trace, counter.count)

    rows = [r for r in run.rows if r.kind == "request"]
    assert len(rows) == len(ref.rows) == 70
    assert [r.context_tokens for r in rows] == [total for total, _, _ in ref.rows]
    assert [r.cache_read_tokens for r in rows] == [read for _, read, _ in ref.rows]
    assert [r.cost_usd for r in rows] == [cost for _, _, cost in ref.rows]
    events = [(e.request, e.kind, e.freed_tokens) for e in run.events if e.kind in ("clear", "compact")]
    assert events == ref.events
    # The scenario exercises both: clearing first, then a compaction when clearing was not enough.
    assert {kind for _, kind, _ in ref.events} == {"clear", "compact"}
    assert not [r for r in run.rows if r.kind == "summarize"]  # the extractive summary is written offline


# ---------------------------------------------------------------- a long session

FILES = ["src/billing/invoice.py", "src/billing/tax.py", "src/billing/money.py", "src/billing/export.py",
         "tests/test_invoice.py", "tests/test_export.py"]


def long_scenario(turns: int = 600) -> Trace:
    """A seed-style session of `turns` turns with every shape of call arguments ctxkit.py maps: a path
    alone (read_file, run_tests), several fields (edit_file: compact JSON), a plain string (grep), and
    seed 000's `section | entry` notes writes; user asides, marker lines (DECISION, TODO, DONE)."""
    messages: list[Message] = []
    for t in range(1, turns + 1):
        if t == 1:
            messages.append(Message("user", "Invoice totals in BRL are off by one cent. Keep USD unchanged."))
        elif t % 29 == 0:
            messages.append(Message("user", f"Also keep the CSV export at two decimals (aside at turn {t})."))
        path = FILES[t % len(FILES)]
        if t % 37 == 0:
            tool, arguments = "notes_write", f"Decisions | round once at the total (turn {t})"
        else:
            tool = ("read_file", "run_tests", "edit_file", "grep")[t % 4]
            arguments = {"read_file": {"path": path}, "run_tests": {"path": path},
                         "edit_file": {"path": path, "old": "float(rate)", "new": f"Decimal(rate)  # {t}"},
                         "grep": f"ROUND_HALF {path.rsplit('/', 1)[0]}"}[tool]
        text = f"Turn {t}: {tool}. " + " ".join(
            f"Line {t * 5 + k} rounds at the currency precision." for k in range(4 + t % 9))
        if t % 8 == 0:
            text += f"\nDECISION: round once at the total (turn {t})"
        if t % 11 == 0:
            text += f"\nTODO: re-run the suite after turn {t}"
        if t % 11 == 5 and t > 11:
            text += f"\nDONE: re-run the suite after turn {t - 16}"
        messages.append(Message("assistant", text, tool_calls=(ToolCall(f"t{t}", tool, arguments),)))
        if tool == "notes_write":
            body = f"ok: Decisions has {t // 37} entries"
        else:
            size = {"read_file": 380, "run_tests": 260, "edit_file": 4, "grep": 40}[tool] + (t * 53) % 120
            body = "\n".join(f"{path}:{i}: amount = Decimal('{t}.{i:02d}') * rate" for i in range(size))
            if tool == "run_tests" and t % 3:
                body += "\nAssertionError: expected Decimal('10.01'), got Decimal('10.00')"
        messages.append(Message("tool", body, tool_call_id=f"t{t}", name=tool))
    return Trace("ctxkit-long", (Session(id="billing-long", system=SYSTEM, messages=tuple(messages),
                                         model="claude-sonnet-4-5", provider="anthropic"),))


def test_ctxkit_preset_matches_seed_000_on_a_long_session():
    """600 turns: clearing and compaction take turns again and again, each compaction summarises the
    summary before it, and the notes file ends every summary. Same sizes, reads, costs and events."""
    trace = long_scenario()
    run, counter = ctxkit_run(trace)
    ref = reference_run(trace, counter.count)

    rows = [r for r in run.rows if r.kind == "request"]
    assert len(rows) == len(ref.rows) == 600
    assert [r.context_tokens for r in rows] == [total for total, _, _ in ref.rows]
    assert [r.cache_read_tokens for r in rows] == [read for _, read, _ in ref.rows]
    assert [r.cost_usd for r in rows] == [cost for _, _, cost in ref.rows]
    events = [(e.request, e.kind, e.freed_tokens) for e in run.events if e.kind in ("clear", "compact")]
    assert events == ref.events
    kinds = [kind for _, kind, _ in ref.events]
    assert kinds.count("compact") >= 5 and kinds.count("clear") >= 20
    assert ref.resummarised == kinds.count("compact") - 1  # every compaction after the first folds the last summary
    assert ref.notes.text().count("\n- ") == 600 // 37  # the notes writes all landed (none refused)
    assert not [e for e in run.events if e.kind == "notes_refused"]
