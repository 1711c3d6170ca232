"""The extraction worked out line by line (`extract`, `extract_by_line`, with their memos) gives what the rules give
over the whole text at once (`reference_extract`): the same identifiers in the same order, whatever was met
before; and the meter's bulk removals count down what one-at-a-time removals would."""

from __future__ import annotations

from itertools import chain
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxsim.loss import identifiers
from ctxsim.loss.identifiers import extract, extract_by_line, forget, reference_extract
from ctxsim.synth import synthesize

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Lines that exercise every rule and the places where line-by-line and whole-text readings could part: a quote
# opened on one line and closed on the next, an apostrophe at a line start, an error word not at a line start,
# a backslash, a grouped number, URLs with trailers, double-quoted strings in a text without a backslash.
LINES = [
    'x = "src/app/main.py" and \'INV-2041\'', "it's `ROUND_HALF_EVEN` here", "'quoted at start' then more",
    '  TypeError: unsupported operand "int"', "see https://example.org/a/b), then", "12,000 tokens and 10.01 s",
    "an error: in the middle", "FAILED tests/test_tax.py::test_round - assert 1 == 2", 'open "unclosed quote',
    'closed here" too', "path\\to\\file.py with a backslash",
    "commit 3f2a9bc1 and 123e4567-e89b-12d3-a456-426614174000",
    "format_money() calls os.path.join(a, b)", "", "   ", "panic: runtime error", "#1234 and ReplayEngine, myVar",
    "'a' 'bb' 'ccc dd'", "`x` `` `long enough`", "Warning: ignore\tthis\x0cline", "\"name\" \"yes\" \"Hello World\"",
]


def both(text: str) -> None:
    expected = reference_extract(text)
    assert extract(text) == expected
    by_line = extract_by_line(text)
    lines = dict.fromkeys(text.split("\n"))
    assert by_line == tuple(dict.fromkeys(chain.from_iterable(reference_extract(line) for line in lines)))


@given(st.lists(st.sampled_from(LINES) | st.text(alphabet=st.sampled_from(list("ab_/.:'\"`\\ \t-#12(),E")),
                                                 max_size=30), max_size=12),
       st.lists(st.integers(0, 11), max_size=12), st.booleans())
@SETTINGS
def test_line_by_line_is_the_whole_text_reading(lines: list[str], repeats: list[int], cold: bool) -> None:
    if cold:
        forget()
    text = "\n".join(lines + [lines[i] for i in repeats if i < len(lines)])
    both(text)
    both(text)  # again, every line now known


def test_a_text_is_read_the_same_cold_half_known_and_warm() -> None:
    """A text read whole (most lines never met), then one half of whose lines are known, then one all known."""
    forget()
    first = "\n".join(LINES[:11])
    mixed = "\n".join([*LINES[5:], "a brand_new_line here", 'and "another" one\\'])
    for text in (first, mixed, first + "\n" + mixed, mixed):
        both(text)
    assert identifiers._LINE  # the lines met again were kept


def test_the_synthetic_trace_reads_the_same() -> None:
    trace = synthesize("coding", turns=40, seed=1)
    texts = [m.content for s in trace.sessions for m in s.messages if m.content]
    assert len(texts) > 60
    for run in range(2):
        if run == 0:
            forget()
        for text in texts:
            assert extract(text) == reference_extract(text)


def test_a_long_line_is_read_each_time_and_not_kept() -> None:
    forget()
    line = "x_" + " ".join(f"name_{i}" for i in range(identifiers.LINE_MEMO_CHARS // 4))
    text = line + "\nshort_line here\n" + line
    assert extract(text) == reference_extract(text)
    assert extract(text) == reference_extract(text)
    assert line not in identifiers._LINE


@pytest.mark.parametrize("spec", ["compact:trigger=3000", "tiered:max_context_tokens=3000", "zones:window=6000",
                                  "clear:trigger=3000,keep=2", "mask:keep=2"])
def test_bulk_removals_count_what_single_removals_count(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The meter counts the identifiers of an edit removing many items down at once (meter.BULK), and of a stub
    replacing one recorded message by what it drops (meter.STUBS): the same misses, removal records and re-fetches
    as when it counts every removed item down and every added one up, one at a time."""
    from ctxsim.loss import TraceIndex, meter, metered_run
    from ctxsim.policies.spec import resolve
    from ctxsim.replay.engine import Replayer, Setup
    from ctxsim.tokens import TokenCounter, get_tokenizer
    from ctxsim.tokens.counting import MessageSizer

    trace = synthesize("coding", turns=60, seed=2)

    def run(bulk: int) -> tuple[str, str]:
        monkeypatch.setattr(meter, "BULK", bulk)
        monkeypatch.setattr(meter, "STUBS", bulk < 10**9)
        monkeypatch.setattr(meter, "CARRY", bulk < 10**9)
        replayer = Replayer(trace, MessageSizer(TokenCounter(get_tokenizer("chars4"))), Setup())
        loss = metered_run(replayer, resolve([spec])[0].policy, index=TraceIndex()).loss
        return repr(loss.misses), repr(loss.refetches)

    one_at_a_time = run(10**9)
    assert "Miss(" in one_at_a_time[0]  # the policy does lose something here: the comparison is not vacuous
    assert run(2) == one_at_a_time


def test_the_line_memos_stay_within_their_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A memo about to pass LINE_MEMO_TOTAL_CHARS is emptied first; what is read stays the same."""
    monkeypatch.setattr(identifiers, "LINE_MEMO_TOTAL_CHARS", 400)
    forget()
    texts = ["\n".join(f"line_{i}_{j} = {i * 1000 + j}" for j in range(12)) for i in range(30)]
    for text in texts + texts:  # the second time round, half known
        assert extract(text) == reference_extract(text)
        assert extract_by_line(text) == tuple(dict.fromkeys(x for line in text.split("\n")
                                                            for x in reference_extract(line)))
        assert sum(map(len, identifiers._LINE)) <= 400 and sum(map(len, identifiers._BY_LINE)) <= 400
        assert sum(map(len, identifiers._MET)) <= 400


def test_a_rolling_summary_counts_as_if_read_whole() -> None:
    """A summary whose oldest lines are dropped and new ones added (lines repeated, an empty one, a line that opens
    like the new first one): its counts from the old one's equal its own lines' counts; one that does not carry
    the old one forward is not taken for one."""
    from ctxsim.loss.meter import _carried, _line_counts

    body = ["- read src/a.py: alpha_one", "- read src/b.py: beta_two", "- read src/a.py: alpha_one", "",
            "- ran pytest: FAILED tests/test_c.py", "- read src/b.py: beta_two and gamma_three", "- saw 12345"]
    for drop in range(len(body)):
        for extra in (["- new_name() in src/d.py"], [], ["- read src/a.py: alpha_one", "- 98765"]):
            old = "[Summary of 7 messages]\n" + "\n".join(body)
            new_body = "\n".join(body[drop:] + extra)
            counts = _carried(old, _line_counts(body, None), new_body, None)
            if drop < len(body) - 1 or body[drop:]:
                assert counts is not None
                assert +counts == +_line_counts(new_body.split("\n"), None), (drop, extra)
    old = "[Summary]\nalpha_one here\nbeta_two here"
    assert _carried(old, _line_counts(["alpha_one here", "beta_two here"], None), "beta_two here!\nmore", None) is None
    assert _carried(old, _line_counts(["alpha_one here", "beta_two here"], None), "something_else", None) is None


def test_double_quoted_strings_count_in_any_text() -> None:
    """A double-quoted string is an identifier whether or not the text also holds a backslash (the rule's gate was
    once its pattern's leading backslash, so `"..."` was read only beside one)."""
    forget()
    for text in ('raise KeyError("no such user here")', 'raise KeyError("no such user here") \\'):
        assert "no such user here" in reference_extract(text)
        assert "no such user here" in extract(text)
    assert "Hello World" in extract('"name" "yes" "Hello World"')


Uses = dict[int, tuple[tuple[str, int, int], ...]]


def _plain_index(session: Any) -> tuple[list[frozenset[str]], frozenset[str], Uses]:
    """The session index as the rules define it, message by message: each message's identifiers (`message_identifiers`
    over its whole text), cut down to those some answer uses; each request's uses with base counts and sources."""
    import json
    from collections import Counter

    from ctxsim.loss.identifiers import message_identifiers

    head = [session.system or ""] + ([json.dumps(list(session.tools), sort_keys=True, default=str)]
                                     if session.tools else [])
    always = frozenset(reference_extract("\n".join(head)))
    found = [message_identifiers(m) for m in session.messages]
    from ctxsim.loss.kinds import discounted

    vocabulary = frozenset(x for m, ids in zip(session.messages, found, strict=True) if m.role == "assistant"
                           for x in ids if not discounted(x)) - always  # bare numbers and units never count
    ids = [tuple(x for x in each if x in vocabulary) for each in found]
    counts: Counter[str] = Counter()
    source: dict[str, int] = {}
    uses: Uses = {}
    for i, m in enumerate(session.messages):
        if m.role == "assistant":
            entry = tuple((x, counts[x], source[x]) for x in ids[i] if x in source)
            if entry:
                uses[i] = entry
        counts.update(ids[i])
        if m.role in ("user", "tool"):
            source.update(dict.fromkeys(ids[i], i))
    return [frozenset(each) for each in ids], vocabulary, uses


@pytest.mark.parametrize("cold", [True, False])
def test_the_index_read_line_by_line_is_the_rules_reading(cold: bool) -> None:
    """The index reads the answers whole and every other message line by line, each distinct line of the session
    once, for the answers' vocabulary only: each message holds what the rules find in its whole text; the answers'
    identifiers and every request's uses (base counts, sources) come out in the rules' order."""
    from ctxsim.loss.index import SessionIndex
    from ctxsim.model import Message, Session, ToolCall

    trace = synthesize("coding", turns=50, seed=3)
    tricky = Session(id="tricky", system="uses `ROUND_HALF_EVEN`", messages=(
        Message(role="user", content="\n".join(LINES)),
        Message(role="assistant", content="\n".join(reversed(LINES)),
                tool_calls=(ToolCall(id="c1", name="bash", arguments={"command": "cat src/app/main.py 'INV-2041'"}),)),
        Message(role="tool", name="bash", content="\n".join(LINES[::2] + LINES), tool_call_id="c1"),
        Message(role="assistant", content="see src/app/main.py and ReplayEngine, 12000, it's INV-2041"),
    ))
    for session in [*trace.sessions, tricky]:
        if cold:
            forget()
        index = SessionIndex.build(session)
        ids, vocabulary, uses = _plain_index(session)
        assert index.vocabulary == vocabulary and index.uses == uses
        assert [frozenset(each) for each in index.ids] == ids
        assert all(len(each) == len(set(each)) for each in index.ids)
        assert [each for each, m in zip(index.ids, session.messages, strict=True) if m.role == "assistant"] == \
            [tuple(x for x in message_identifiers_of(m) if x in vocabulary) for m in session.messages
             if m.role == "assistant"]
        assert any(uses)  # the comparison is not vacuous
        for i, entry in uses.items():
            assert index.checks[id(session.messages[i])] == tuple(tuple(column) for column in zip(*entry, strict=True))


def message_identifiers_of(message: Any) -> tuple[str, ...]:
    from ctxsim.loss.identifiers import message_identifiers

    return message_identifiers(message)


def test_line_counts_with_a_memo_count_as_without() -> None:
    """A long text's line counts through the session's line memo (filled in, then used) equal those worked out
    afresh: every occurrence of a line that holds an identifier counted, only the vocabulary's."""
    from ctxsim.loss.meter import _line_counts

    lines = LINES + LINES[3:9] + ["", "alpha_one beta_two", "alpha_one"]
    vocabulary = frozenset(["alpha_one", "src/app/main.py", "INV-2041", "ROUND_HALF_EVEN", "12000", "ReplayEngine"])
    expected: dict[str, int] = {}
    for line in lines:
        for x in set(reference_extract(line)) & vocabulary:
            expected[x] = expected.get(x, 0) + 1
    memo: dict[str, tuple[str, ...]] = {}
    canon = {x: x for x in vocabulary}  # SessionIndex.canon: the vocabulary, each identifier one object
    assert dict(_line_counts(lines, canon, memo)) == expected
    assert memo and dict(_line_counts(lines, canon, memo)) == expected
    assert all(canon[x] is x for held in memo.values() for x in held)
    assert dict(_line_counts(lines, None)) == _every_count(lines)


def _every_count(lines: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in lines:
        for x in set(reference_extract(line)):
            counts[x] = counts.get(x, 0) + 1
    return counts


def test_an_index_built_elsewhere_is_the_same_index() -> None:
    """`TraceIndex.built` (what travels from the process that built it) and `adopt` give back every field."""
    import pickle

    from ctxsim.loss import TraceIndex
    from ctxsim.synth import synthesize

    trace = synthesize("coding", turns=40, seed=5)
    here = TraceIndex().prime(trace.sessions)
    there = TraceIndex().adopt(trace.sessions, pickle.loads(pickle.dumps(TraceIndex().built(trace.sessions))))
    for session in trace.sessions:
        a, b = here.of(session), there.of(session)
        assert b.session is session
        assert (a.ids, a.by_message, a.always, a.uses, a.vocabulary, a.checks, a.canon) == \
            (b.ids, b.by_message, b.always, b.uses, b.vocabulary, b.checks, b.canon)
        assert a.uses and any(a.ids)
        assert all(b.canon[x] is x for ids in b.ids for x in ids)  # the one object kept of each identifier
