"""The loss meter checked against a product's compaction (ctxsim.loss.compaction) on small hand-made two-part
sessions; what a simulated model summary keeps; redaction makes loss unknown; sizes never negative."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxsim.loss import TraceIndex, metered_run
from ctxsim.loss.compaction import (
    CompactionLoss,
    Predicted,
    check,
    clearings,
    entries,
    scored_on,
    stage_of,
    summary,
    summary_line,
)
from ctxsim.loss.kinds import RETAINED, kept_by_summary
from ctxsim.loss.observed import Observed, Refetch, Target, detector, detectors
from ctxsim.model import Event, Message, Session, ToolCall, Trace
from ctxsim.policies.spec import resolve
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import MessageSizer

PAD = " filler" * 40
BIG = " filler" * 2_000  # ~3,500 tokens (chars4): two such reads outweigh the product's 5,258-token summary


def read(n: str, path: str, body: str) -> list[Message]:
    return [Message("assistant", "", tool_calls=(ToolCall(n, "Read", {"file_path": path}),)),
            Message("tool", body + BIG, tool_call_id=n, name="Read")]


def compacted(marker: str = "") -> Trace:
    """A Claude Code session compacted after 3 requests: before it the agent read two files and named what it
    found; after it, it reads config.py again and names a symbol from it and one from billing.py."""
    before = Session(id="s", source="claude-code", messages=(
        Message("user", "Look at the billing code. " + marker),
        *read("1", "/r/src/config.py", "MAX_RETRIES = 3\nRETRY_BACKOFF_MS = 250\ndef load_config(): pass"),
        *read("2", "/r/src/billing.py", "def compute_tax(invoice): return round_half_even(invoice)"),
        Message("assistant", "load_config and compute_tax are the entry points; see /r/src/config.py.")))
    after = Session(id="s/part-2", source="claude-code", extra={"continues": "s"},
                    events=(Event("compaction", 0, None, {"trigger": "manual", "pre_tokens": 900}),), messages=(
        Message("summary", "Summary: the user asked about billing."), Message("user", "Now fix the retries."),
        *read("3", "/r/src/config.py", "MAX_RETRIES = 3\nRETRY_BACKOFF_MS = 250\ndef load_config(): pass"),
        Message("assistant", "MAX_RETRIES with RETRY_BACKOFF_MS; compute_tax calls round_half_even.")))
    return Trace("t", (before, after))


def test_a_compaction_is_observed_and_predicted_on_the_same_request() -> None:
    [c] = check(compacted(), "chars4")
    assert (c.before, c.session, c.product, c.after_request) == ("s", "s/part-2", "claude-code", 4)
    assert [(r.tool, r.target.key) for r in c.observed.refetches] == [("Read", "/r/src/config.py")]
    assert c.observed.refetch_tokens > 0
    p = c.predicted
    assert p.request == 4 and p.why is None
    # the agent then uses round_half_even (billing.py's, never re-read): a recall miss the meter sees
    assert p.recall_misses is not None and p.recall_misses >= 1
    assert p.refetches is not None and p.refetch_tokens is not None and p.refetch_tokens >= 0
    loss = c.loss_json()
    assert set(loss) == {"observed", "predicted"}
    assert set(loss["predicted"]) == {"refetches", "refetch_tokens", "recall_misses"}


def test_redacted_text_makes_the_prediction_unknown_never_a_number() -> None:
    [c] = check(compacted("[REDACTED_TEXT len=161 sha=dc9e82a0]"), "chars4")
    assert c.predicted.refetches is None and c.predicted.recall_misses is None
    assert "redacted" in (c.predicted.why or "") and c.scored == "unknown"
    assert c.loss_json()["predicted"]["unknown"]
    assert "unknown" in summary_line([c])


def test_no_recall_miss_comes_from_a_redaction_marker_or_a_bare_number() -> None:
    marker = "[REDACTED_TEXT len=3021 sha=dc9e82a0]"
    session = Session(id="r", source="codex", messages=(
        Message("user", "what took the room?"),
        Message("assistant", "", tool_calls=(ToolCall("1", "shell", {"command": ["bash", "-lc", "du -h"]}),)),
        Message("tool", f"{marker} took 276 KiB, 0.15 of it" + PAD, tool_call_id="1", name="shell"),
        Message("assistant", "", tool_calls=(ToolCall("2", "shell", {"command": ["bash", "-lc", "ls -la"]}),)),
        Message("tool", "b.txt" + PAD, tool_call_id="2", name="shell"),
        Message("assistant", f"{marker} 276 KiB 0.15")))
    replayer = Replayer(Trace("t", (session,)), MessageSizer(TokenCounter(get_tokenizer("chars4"))), Setup())
    run = metered_run(replayer, resolve(["clear:trigger=0,keep=0"])[0].policy, index=TraceIndex())
    assert [e.kind for e in run.events] and run.loss.misses == []  # the result was cleared, yet nothing is missed
    assert TraceIndex().of(session).redacted == 2  # the result's and the answer's text


def test_a_modelled_summary_keeps_the_measured_share_by_kind() -> None:
    paths = [f"src/module_{i}/file_{i}.py" for i in range(400)]
    share = sum(map(kept_by_summary, paths)) / len(paths)
    assert abs(share - RETAINED["path"]) < 0.08
    assert not any(kept_by_summary(u) for u in ("https://example.org/a", "276", "KiB"))
    assert kept_by_summary(paths[7]) == kept_by_summary(paths[7])  # the same choice every time


def test_the_product_stage_has_no_threshold_of_its_own() -> None:
    stage = stage_of("claude-code")
    assert stage.startswith("compact:") and "headroom_tokens" not in stage and "summarizer=llm" in stage
    assert "compact_at" not in stage_of("codex") and stage_of("no-such-product").startswith("compact:")


def _loss(before: str, refetches: int, tokens: int, predicted: Predicted) -> CompactionLoss:
    seen = [Refetch(i, "Read", Target("file", f"f{i}"), tokens // refetches) for i in range(refetches)]
    return CompactionLoss(before, before + "/part-2", "claude-code", 5, Observed("compaction", before, 3, seen),
                          predicted)


def test_entries_put_the_loss_beside_the_presets_side_and_keep_the_others() -> None:
    a = _loss("a", 6, 1_800, Predicted(6, 3_000, 10, 5))
    b = _loss("b", 2, 400, Predicted(9, 9_000, 29, 5))
    out = entries([a, b], [("a", {"product": {"x": 1}, "preset": {}})])
    assert out[0]["product"] == {"x": 1} and out[0]["loss"]["predicted"]["refetches"] == 6
    assert out[1] == {"after_request": 5, "loss": b.loss_json()}
    assert (a.scored, b.scored) == ("within", "count off")
    s = summary([a, b])
    assert (s["observed_refetches"], s["predicted_refetches"], s["within_targets"]) == (8, 15, 1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.integers(-100_000, 1_000_000), product=st.sampled_from(sorted(detectors())),
       tool=st.sampled_from(["Read", "Bash", "shell", "read_file", "str_replace_editor", "Task", None]))
def test_a_reread_is_never_negative_nor_more_than_the_source(source: int, product: str, tool: str | None) -> None:
    tokens = detector(product).reread_tokens(tool, source)
    assert 0 <= tokens <= max(0, source)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(-5_000, 5_000), min_size=2, max_size=6), keep=st.integers(0, 2))
@example(sizes=[14, -2898], keep=0)  # a prompt sized below zero once priced a re-fetch at -$0.0000003
def test_no_size_is_negative_in_a_metered_run(sizes: list[int], keep: int) -> None:
    """Tool results whose counted size is negative (a calibration's overhead can make it so) still give re-fetches
    and misses of no negative size."""
    messages: list[Message] = [Message("user", "go")]
    for i, size in enumerate(sizes):
        messages.append(Message("assistant", "", tool_calls=(ToolCall(str(i), "Read", {"file_path": f"f{i}.py"}),)))
        messages.append(Message("tool", f"path/to/thing_{i}.py value_{i}_name", tool_call_id=str(i), name="Read",
                                extra_tokens=size))
    messages.append(Message("assistant", " ".join(f"path/to/thing_{i}.py value_{i}_name" for i in range(len(sizes)))))
    trace = Trace("t", (Session(id="p", source="claude-code", messages=tuple(messages)),))
    replayer = Replayer(trace, MessageSizer(TokenCounter(get_tokenizer("chars4"))), Setup())
    run = metered_run(replayer, resolve([f"clear:trigger=0,keep={keep}"])[0].policy, index=TraceIndex())
    assert all(f.tokens >= 0 for f in run.loss.refetches)
    assert all(m.source_tokens >= 0 for m in run.loss.misses)
    assert run.loss.miss_source_tokens >= 0 and run.loss.refetch_cost_usd >= 0


def test_tune_is_told_how_the_meter_scored_only_where_there_were_compactions() -> None:
    meter, note = scored_on([compacted()], "chars4")
    assert meter is not None and meter["compactions"] == 1 and meter["observed_refetches"] == 1
    assert note is not None and note.startswith("on your own compactions, loss meter on 1 of 1")
    alone = Trace("t", (compacted().sessions[0],))
    assert scored_on([alone], "chars4") == (None, None)


def test_validate_json_puts_each_compactions_loss_in_its_entry(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json
    from dataclasses import replace

    from typer.testing import CliRunner

    from ctxsim.cli import app
    from ctxsim.formats import native
    from ctxsim.model import Usage

    def billed(session: Session) -> Session:  # each answer with a recorded usage, to validate against
        return replace(session, messages=tuple(replace(m, usage=Usage(input_tokens=1_000 * (i + 1), output_tokens=20))
                                               if m.role == "assistant" else m for i, m in enumerate(session.messages)))

    path = tmp_path / "compacted.jsonl"
    with path.open("w") as out:
        native.write(Trace("t", tuple(map(billed, compacted().sessions))), out)
    run = CliRunner().invoke(app, ["validate", str(path), "--json", "--tokenizer", "chars4", "--no-calibrate"])
    assert run.exit_code == 0, run.output
    [entry] = json.loads(run.stdout)["compactions"]
    assert entry["after_request"] == 4
    assert entry["loss"]["observed"]["refetches"] == 1
    assert set(entry["loss"]["predicted"]) == {"refetches", "refetch_tokens", "recall_misses"}


def test_a_product_clearing_is_listed_with_what_was_refetched_after_it() -> None:
    before, after = compacted().sessions
    whole = Session(id="w", source="claude-code", messages=before.messages + after.messages[1:],
                    events=(Event("microcompact", len(before.messages), None, {}),))
    [cleared] = clearings(Trace("t", (whole,)), "chars4")
    assert cleared["session"] == "w" and cleared["observed"]["refetches"] == 1
    assert clearings(compacted(), "chars4") == []


def test_compare_says_how_the_meter_scored_beside_its_verdict_only_where_there_were_compactions(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """compare meters loss by default: on a trace that recorded a product compaction, its notes and run.json say
    how the meter scored there; a trace with none keeps its artefact as it was (no key)."""
    import json

    from typer.testing import CliRunner

    from ctxsim.cli import app
    from ctxsim.formats import native

    def compare(trace: Trace, name: str) -> tuple[str, dict]:
        path = tmp_path / f"{name}.jsonl"
        with path.open("w") as out:
            native.write(trace, out)
        run = CliRunner().invoke(app, ["compare", str(path), "--policies", "none,clear", "--tokenizer", "chars4",
                                       "--no-calibrate", "--model", "claude-sonnet-4-5", "-o",
                                       str(tmp_path / f"{name}.json")])
        assert run.exit_code == 0, run.output
        return run.stdout, json.loads((tmp_path / f"{name}.json").read_text())

    said, artefact = compare(compacted(), "compacted")
    assert "note: on your own compactions, loss meter on 1 of 1 recorded compaction(s)" in said
    assert artefact["manifest"]["loss"]["meter_scored"]["observed_refetches"] == 1
    said, artefact = compare(Trace("t", (compacted().sessions[0],)), "alone")
    assert "on your own compactions" not in said and "meter_scored" not in artefact["manifest"]["loss"]
