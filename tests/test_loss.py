"""The loss meter (ctxsim.loss): identifier extraction, exact recall misses on a hand-made trace, re-fetches,
probes, and the engine's `requested` hook."""

from __future__ import annotations

from decimal import Decimal

import pytest

from ctxsim.errors import CtxsimError
from ctxsim.loss import TraceIndex, metered_run
from ctxsim.loss.identifiers import extract, message_identifiers
from ctxsim.loss.meter import from_json, shown, to_json
from ctxsim.loss.probes import ProbeSet, load_file, probe, probe_set
from ctxsim.model import Message, Session, ToolCall, Trace
from ctxsim.policies.spec import resolve
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import MessageSizer

PAD = " filler" * 60  # ~100 tokens (chars4) of words no rule takes


def known_trace() -> Trace:
    """Three reads, each result holding two identifiers only it has; request 4 uses alpha's, request 5
    beta's and gamma's. Requests: 1-3 call read_file (alpha, beta, gamma), 4 and 5 answer in text."""
    m = [Message("user", "Please look at the three modules and report their constants.")]
    for n, (name, body) in enumerate([("alpha", "def alpha_value():\n    return ALPHA_MAX"),
                                       ("beta", "BETA_LIMIT = BETA_CAP"), ("gamma", "gamma_rate = GAMMA_TOP")], 1):
        m.append(Message("assistant", "", tool_calls=(ToolCall(f"c{n}", "read_file", {"path": f"src/{name}.py"}),)))
        m.append(Message("tool", body + PAD, tool_call_id=f"c{n}", name="read_file"))
    m.append(Message("assistant", "alpha_value returns ALPHA_MAX."))
    m.append(Message("user", "And the other two?"))
    m.append(Message("assistant", "BETA_LIMIT is BETA_CAP and gamma_rate is GAMMA_TOP."))
    return Trace("t", (Session(id="s", system="You are a coding agent.", messages=tuple(m)),))


def run_of(trace: Trace, spec: str, probes: ProbeSet | None = None):  # type: ignore[no-untyped-def]
    replayer = Replayer(trace, MessageSizer(TokenCounter(get_tokenizer("chars4"))), Setup())
    return metered_run(replayer, resolve([spec])[0].policy, index=TraceIndex(), probes=probes)


def misses(run) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted((m.request, m.identifier, m.source, m.role, m.tool, m.removed.request, m.removed.kind)
                  for m in run.loss.misses)


# ---------------------------------------------------------------- extraction


def test_extraction_rules_take_identifiers_and_leave_prose() -> None:
    text = ("I read src/billing/tax.py; see https://example.org/a/b. format_money() and ReplayEngine, myVar, "
            "os.path.join, commit 3f2a9bc1, INV-2041, 12,000 tokens, 10.01, e.g. don't 'yes' \"name\" "
            "`ROUND_HALF_EVEN` 'hello world'\n  AssertionError: expected 1")
    ids = extract(text)
    for wanted in ("src/billing/tax.py", "tax.py", "https://example.org/a/b", "format_money", "ReplayEngine", "myVar",
                   "os.path.join", "3f2a9bc1", "INV-2041", "12000", "10.01", "ROUND_HALF_EVEN", "hello world",
                   "AssertionError: expected 1", "AssertionError"):
        assert wanted in ids, wanted
    for noise in ("e.g", "yes", "name", "don", "2041", "the", "I", "read"):
        assert noise not in ids, noise
    assert len(ids) == len(set(ids))
    assert extract(text) == ids  # deterministic


def test_extraction_excludes_the_too_common() -> None:
    assert extract("self None True null __init__ 000 0.00 a b c the and for 12 99") == ()


def test_tool_call_arguments_give_values_not_keys() -> None:
    m = Message("assistant", "", tool_calls=(ToolCall("c1", "edit", {"file_path": "src/x.py", "old_string": "42"}),))
    ids = message_identifiers(m)
    assert "src/x.py" in ids and "file_path" not in ids and "old_string" not in ids


# ---------------------------------------------------------------- exact misses on a hand-made trace


def test_none_misses_nothing() -> None:
    run = run_of(known_trace(), "none")
    assert run.loss.misses == [] and run.loss.refetches == [] and run.loss.refetch_cost_usd == 0


def test_clear_misses_exactly_the_cleared_results_identifiers() -> None:
    # keep=1: at request 3 alpha's result is cleared (beta's is the newest), at 4 beta's; gamma's stays.
    run = run_of(known_trace(), "clear:trigger=0,keep=1")
    assert misses(run) == [(4, "ALPHA_MAX", 2, "tool", "read_file", 3, "clear"),
                           (4, "alpha_value", 2, "tool", "read_file", 3, "clear"),
                           (5, "BETA_CAP", 4, "tool", "read_file", 4, "clear"),
                           (5, "BETA_LIMIT", 4, "tool", "read_file", 4, "clear")]
    assert run.loss.distinct_identifiers == 4
    # the stub keeps the call's path, so the file name is not a miss
    assert all(m.identifier != "src/alpha.py" for m in run.loss.misses)


def test_mask_misses_the_outputs_of_turns_older_than_keep() -> None:
    # keep=1: at request k the turns in the history are those of requests < k; request 3 masks alpha's, 4 beta's
    run = run_of(known_trace(), "mask:keep=1")
    assert misses(run) == [(4, "ALPHA_MAX", 2, "tool", "read_file", 3, "mask"),
                           (4, "alpha_value", 2, "tool", "read_file", 3, "mask"),
                           (5, "BETA_CAP", 4, "tool", "read_file", 4, "mask"),
                           (5, "BETA_LIMIT", 4, "tool", "read_file", 4, "mask")]


def test_compact_misses_what_the_summary_left_out() -> None:
    # the prompt passes 400 tokens before request 4 only; everything but gamma's call and result is summarised,
    # and the extractive summary keeps the task and file names, not the values read
    run = run_of(known_trace(), "compact:trigger=400,compact_above=0,keep_recent=2,clear_at_least=0")
    assert [(e.request, e.kind) for e in run.events] == [(4, "compact")]
    assert misses(run) == [(4, "ALPHA_MAX", 2, "tool", "read_file", 4, "compact"),
                           (4, "alpha_value", 2, "tool", "read_file", 4, "compact"),
                           (5, "BETA_CAP", 4, "tool", "read_file", 4, "compact"),
                           (5, "BETA_LIMIT", 4, "tool", "read_file", 4, "compact")]


def test_a_stub_that_keeps_the_identifier_is_no_miss() -> None:
    run = run_of(known_trace(), "clear:trigger=0,keep=1,stub=[cleared: alpha_value BETA_LIMIT ALPHA_MAX BETA_CAP]")
    assert run.loss.misses == []


def test_refetches_each_source_once_until_a_result_is_removed_again() -> None:
    run = run_of(known_trace(), "clear:trigger=0,keep=1")
    loss = run.loss
    # two misses from alpha's result at request 4: one re-fetch; beta's at 5 (clear removed a result at 4)
    assert [(f.request, f.source, f.tool) for f in loss.refetches] == [(4, 2, "read_file"), (5, 4, "read_file")]
    assert loss.refetch_cost_usd > 0
    row = next(r for r in run.rows if r.request == 4)
    replayer_pricer = Replayer(known_trace(), MessageSizer(TokenCounter(get_tokenizer("chars4"))), Setup()).pricer
    from ctxsim.pricing.prices import Bill

    first = replayer_pricer.cost(Bill(row.input_tokens + loss.refetches[0].tokens, row.input_tokens,
                                      loss.refetches[0].tokens, 0, 50), None)
    assert Decimal(0) < first < loss.refetch_cost_usd


def test_misses_round_trip_through_json_without_content_by_default() -> None:
    run = run_of(known_trace(), "clear:trigger=0,keep=1")
    data = to_json(run.loss, run.totals.cost_usd, content=False)
    assert data["recall_misses"] == 4 and data["distinct_identifiers"] == 4
    text = repr(data)
    assert "alpha_value" not in text and "BETA_LIMIT" not in text
    assert shown("alpha_value", False) in data["misses"]["values"][2]
    back = from_json(data)
    assert len(back.misses) == 4 and back.refetch_cost_usd == run.loss.refetch_cost_usd
    assert Decimal(data["cost_with_refetch_usd"]) == run.totals.cost_usd + run.loss.refetch_cost_usd
    assert "alpha_value" in repr(to_json(run.loss, run.totals.cost_usd, content=True))


# ---------------------------------------------------------------- probes


def test_probes_checked_at_requests_and_at_the_end(tmp_path) -> None:  # type: ignore[no-untyped-def]
    probes = ProbeSet((probe("BETA_LIMIT = BETA_CAP"), probe("re:gamma_\\w+ = GAMMA_TOP"), probe("src/alpha.py"),
                       probe("def alpha_value")), frozenset({3, 5}))
    run = run_of(known_trace(), "clear:trigger=0,keep=1", probes)
    table = {p["probe"]: (p["at"], p["end"]) for p in run.loss.probes}
    assert table["BETA_LIMIT = BETA_CAP"] == ({"3": True, "5": False}, False)  # cleared at request 4
    assert table["def alpha_value"] == ({"3": False, "5": False}, False)  # cleared at request 3, before it is sent
    assert table["re:gamma_\\w+ = GAMMA_TOP"] == ({"3": False, "5": True}, True)  # read by request 3, after it
    assert table["src/alpha.py"] == ({"3": True, "5": True}, True)  # in the call and in the stub
    assert run.loss.probes_lost == 2
    none = run_of(known_trace(), "none", probes)
    assert none.loss.probes_lost == 0


def test_probe_files_and_bad_probes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "p.toml"
    path.write_text('[[probe]]\nname = "limit"\ntext = "BETA_LIMIT"\n[[probe]]\npattern = "gamma_\\\\w+"\n')
    loaded = load_file(str(path))
    assert [p.name for p in loaded] == ["limit", "re:gamma_\\w+"]
    with pytest.raises(CtxsimError, match="not a regular expression"):
        probe("re:(")
    with pytest.raises(CtxsimError, match="not a request number"):
        probe_set(["x"], None, "3,zero")
    with pytest.raises(CtxsimError, match="no --probe"):
        probe_set(None, None, "3")
    bad = tmp_path / "bad.toml"
    bad.write_text('[[probe]]\ntext = "a"\npattern = "b"\n')
    with pytest.raises(CtxsimError, match="one of them"):
        load_file(str(bad))


# ---------------------------------------------------------------- the engine hook


def test_requested_hook_sees_each_request_before_its_answer() -> None:
    seen: list[tuple[int, str, list]] = []

    class Watcher:
        def __init__(self) -> None:
            self.items = 0
            self.starts = 0

        def start(self) -> None:
            self.starts += 1

        def observe(self, removed, added) -> None:  # type: ignore[no-untyped-def]
            self.items += len(added) - len(removed)

        def requested(self, number, message, edits) -> None:  # type: ignore[no-untyped-def]
            seen.append((number, message.content, list(edits), self.items))

    trace = known_trace()
    watcher = Watcher()
    replayer = Replayer(trace, MessageSizer(TokenCounter(get_tokenizer("chars4"))), Setup())
    replayer.run(resolve(["clear:trigger=0,keep=1"])[0].policy, observers=(watcher,))
    assert watcher.starts == 1
    assert [s[0] for s in seen] == [1, 2, 3, 4, 5]
    assert seen[3][1] == "alpha_value returns ALPHA_MAX."
    assert seen[2][2] == [("clear", "clear", 1)] and seen[0][2] == []
    assert [s[3] for s in seen] == [1, 3, 5, 7, 9]  # the answer is appended after the hook
