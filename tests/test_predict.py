"""Issue 25, part A: `validate --predict`: calibrated on the first part of each session, scored on the rest.

- the split: which requests are fitted on and which scored, and that the calibration never sees the
  scored requests' usage;
- a provider cache miss in the scored part: the anchored score copies it (a ceiling), the predicted one
  does not, and says so (its read is the model's);
- a log that misses part of every user message (redacted text): the growth model learned on the first
  half carries the missing tokens into the second, where the fit part's calibration alone falls behind;
- a complete log gets no growth model; the CLI's blocks and its bad `--fit-on`.

Counted with chars4 (a token is 4 characters); sizes are set by hand and worked out in the comments.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from typer.testing import CliRunner

from ctxsim.analysis.calibrate import calibration
from ctxsim.analysis.predict import predict, score_blocks, split
from ctxsim.analysis.validate import validate
from ctxsim.cli import app
from ctxsim.model import Message, Session, Trace, Usage, format_ts
from ctxsim.policies import parse_policy
from ctxsim.replay.engine import Replayer, Setup
from ctxsim.tokens import TokenCounter, get_tokenizer
from ctxsim.tokens.counting import Framing, MessageSizer

T0 = 1_768_323_360.0  # 2026-01-13
SYSTEM = 2_000


def billed_trace(miss_at: int = 0, read: int = SYSTEM, turns: int = 8) -> Trace:
    """A Sonnet 4.5 session billed as ctxsim's engine replays it (sizes x 1.25, 12 tokens a message), then a
    provider miss at request `miss_at` (0: none): it read `read` tokens and wrote the rest. User message k
    is 150 k tokens (chars4), every answer 40; the log holds no system prompt (a hidden prefix of 2,000)."""
    t = T0
    messages = []
    for k in range(1, turns + 1):
        messages.append(Message("user", "abcd" * (150 * k), ts=format_ts(t)))
        t += 15
        messages.append(Message("assistant", "wxyz" * 40, ts=format_ts(t)))
        t += 5
    truth = Session(id="s", model="claude-sonnet-4-5", provider="anthropic", system_tokens=SYSTEM, tools_tokens=0,
                    messages=tuple(messages))
    sizer = MessageSizer(TokenCounter(get_tokenizer("chars4")),
                         Framing(message_tokens=12, tool_call_tokens=0, tool_result_tokens=0, scale=1.25))
    run = Replayer(Trace("truth", (truth,)), sizer, Setup()).run(parse_policy("none"))
    rows = iter(r for r in run.rows if r.kind == "request")
    billed = []
    index = 0
    for m in messages:
        if m.role == "assistant":
            index += 1
            r = next(rows)
            reads, writes = r.cache_read_tokens, r.cache_write_tokens
            if index == miss_at:
                reads, writes = read, writes + reads - read
            billed.append(replace(m, usage=Usage(r.input_tokens, reads, writes, 0, 40)))
        else:
            billed.append(m)
    return Trace("billed", (replace(truth, system_tokens=None, messages=tuple(billed)),))


def test_the_split_fits_on_the_first_part_and_hides_the_rest():
    trace = billed_trace()
    fit, scored = split(trace, 0.5)
    assert scored == {"s": (5, 6, 7, 8)}  # 8 billed requests: ceil(0.5 x 8) = 4 fitted on
    usages = [m.usage for m in fit.sessions[0].messages if m.role == "assistant"]
    assert [u is not None for u in usages] == [True] * 4 + [False] * 4
    assert all(m.usage is not None for m in trace.sessions[0].messages if m.role == "assistant")  # a copy
    assert split(trace, 0.3)[1] == {"s": (4, 5, 6, 7, 8)}  # ceil(2.4) = 3
    assert split(billed_trace(turns=1), 0.5)[1] == {"s": ()}  # one request: fitted on, nothing to score


def test_a_provider_miss_in_the_scored_part_is_copied_by_the_anchored_score_only():
    trace = billed_trace(miss_at=6)
    anchored = validate(trace, "chars4")
    assert anchored.calibration is not None and list(anchored.calibration.cache_facts) == ["s"]
    assert {k: v[:3] for k, v in anchored.calibration.cache_facts["s"].items()} == {6: (SYSTEM, None, None)}
    by_index = {c.index: c for c in anchored.checks}
    assert by_index[6].simulated_cache_read_tokens == SYSTEM  # copied from the bill
    p = predict(trace, "chars4", 0.5)
    assert [c.index for c in p.checks] == [5, 6, 7, 8] and p.fit_requests == 4
    cal = p.validation.calibration
    assert cal is not None and cal.cache_facts == {} and cal.requests_used == 4
    assert p.growth_model is None  # the log is complete: nothing to carry
    mine = {c.index: c for c in p.checks}
    # the model reads the whole previous prompt (request 5's, ~4,000 tokens) where the provider read 2,000
    assert mine[6].simulated_cache_read_tokens > mine[6].recorded_cache_read_tokens + 1_000
    # the prompt itself is predicted: fitted on requests 1-4, every scored prompt within 1 %
    assert max(abs(c.prompt_error) for c in p.checks) < 0.01
    # the miss made the bill dearer than the model: the predicted cost falls short, the anchored one does not
    blocks = score_blocks(anchored, p)
    assert blocks["predicted"]["cost_error"] < -0.01 < blocks["anchored"]["cost_error"]
    assert blocks["facts"]["ceilings"] == 1 and blocks["predicted"]["facts"]["ceilings"] == 0
    low, high = blocks["predicted"]["cost_range_usd"]
    assert low == high == blocks["predicted"]["cost_usd"]  # no miss on the fitted requests: nothing to carry
    assert blocks["sessions"]["s"]["predicted"]["scored_requests"] == 4
    assert blocks["sessions"]["s"]["anchored"]["scored_requests"] == 8


HIDDEN = 600  # billed tokens of every user message the log does not hold (a redacted text, an attachment)


def lacking_trace(turns: int = 12) -> Trace:
    """An OpenAI session: user message k is 10 tokens in the log but billed 10 + 600, every answer 5; each
    message billed at its text + 4 (the chars4 prior: scale 1.0, overhead 4); a 3,000-token hidden prefix."""
    messages = []
    billed = 3_000
    for k in range(1, turns + 1):
        messages.append(Message("user", "abcd" * 10, ts=format_ts(T0 + 60 * k)))
        billed += 10 + 4 + HIDDEN
        messages.append(Message("assistant", "efgh" * 5, ts=format_ts(T0 + 60 * k + 5),
                                usage=Usage(billed, 0, 0, 0, 5)))
        billed += 5 + 4
    return Trace("lacking", (Session(id="l", source="synthetic", model="gpt-4.1", provider="openai",
                                     messages=tuple(messages)),))


def test_the_growth_model_carries_what_the_log_misses_into_the_scored_requests():
    trace = lacking_trace()
    p = predict(trace, "chars4", 0.5)
    model = p.growth_model
    assert model is not None and model.requests == 5  # requests 2-6 of the fitted half, each after one
    # each of requests 2-6 grew 600 more than its new messages explain: 5 x 600 re-anchored on the fit part
    assert model.missing_tokens == 5 * HIDDEN
    # what it predicts for a request whose new messages are one answer (5 counted, no framing) and one user
    # message (10): the 600 (every fitted request looked alike, so how it splits over kinds is not asked)
    assert abs(model.tokens({"assistant": 5, "user": 10, "tool": 0, "other": 0}) - HIDDEN) < 1
    assert [c.index for c in p.checks] == list(range(7, 13))
    assert max(abs(c.prompt_error) for c in p.checks) < 0.005
    assert all(c.anchor_tokens == HIDDEN for c in p.checks)  # counted at scale 1.0
    assert p.growth_model_tokens == 6 * HIDDEN
    anchored = validate(trace, "chars4")
    missing = score_blocks(anchored, p, trace)["missing_tokens"]
    # the anchored fit re-anchors every request's 600 but the first's (that one is in the hidden prefix)
    assert missing == {"re_anchored_tokens": 11 * HIDDEN, "dropped_tokens": 0, "redacted_tokens": 0,
                       "growth_model_tokens": 6 * HIDDEN}
    assert any("growth model" in r for c in p.checks for r in c.reasons)
    # without the model, the fit part's calibration alone falls 600 behind per scored request: 3,600 at the last
    fit_cal = calibration(split(trace, 0.5)[0], "chars4")
    assert fit_cal.growth_from == {"l": 7}  # the calibration itself carries it past its last bill
    alone = {c.index: c for c in validate(trace, "chars4", calibration=replace(
        fit_cal, cache_facts={}, growth_model=None)).checks}
    assert alone[12].recorded_input_tokens - alone[12].simulated_input_tokens == 6 * HIDDEN
    carried = {c.index: c for c in validate(trace, "chars4", calibration=replace(fit_cal, cache_facts={})).checks}
    assert carried[12].simulated_input_tokens == carried[12].recorded_input_tokens


def run_cli(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args))


def test_validate_cli_shows_both_scores_and_rejects_a_bad_share(tmp_path: Path):
    from ctxsim.formats import native as native_format

    path = tmp_path / "billed.jsonl"
    with path.open("w") as out:
        native_format.write(billed_trace(miss_at=6), out)
    data = json.loads(run_cli("validate", str(path), "--json", "--tokenizer", "chars4").stdout)
    keys = {"fit_requests", "scored_requests", "prompt_error_median", "prompt_error_p90", "hit_rate_recorded",
            "hit_rate_simulated", "cost_usd", "billed_usd", "cost_error", "cost_range_usd"}
    assert keys <= set(data["predicted"]) and keys <= set(data["anchored"])
    assert (data["anchored"]["scored_requests"], data["predicted"]["scored_requests"]) == (8, 4)
    assert data["facts"]["ceilings"] == 1 and set(data["sessions"]) == {"s"}
    assert data["requests_with_usage"] == 8  # the default report's details stay the anchored ones
    predicted = json.loads(run_cli("validate", str(path), "--json", "--tokenizer", "chars4", "--predict",
                                   "--fit-on", "0.75").stdout)
    assert predicted["requests_with_usage"] == 2 and predicted["predicted"]["fit_requests"] == 6
    text = run_cli("validate", str(path), "--tokenizer", "chars4", "--worst", "0")
    assert text.exit_code == 0 and "anchored and predicted" in text.stdout and "predicted (fit on first 50%)" in \
        text.stdout
    # a share that leaves nothing to score: the default shows the anchored score alone, --predict says why not
    alone = json.loads(run_cli("validate", str(path), "--json", "--tokenizer", "chars4", "--fit-on", "0.99").stdout)
    assert alone["predicted"] is None and alone["anchored"]["scored_requests"] == 8
    none = run_cli("validate", str(path), "--tokenizer", "chars4", "--predict", "--fit-on", "0.99")
    assert none.exit_code == 2 and "no session has a request left to score" in none.stderr
    bad = run_cli("validate", str(path), "--predict", "--fit-on", "1.5")
    assert bad.exit_code == 2 and "--fit-on" in bad.stderr and "Traceback" not in bad.output
    both = run_cli("validate", str(path), "--predict", "--no-calibrate")
    assert both.exit_code == 2 and "--no-calibrate" in both.stderr


def test_replay_and_compare_carry_the_predicted_error_beside_none(tmp_path: Path):
    from ctxsim.formats import native as native_format
    from ctxsim.replay.api import replay_trace
    from ctxsim.reports._terminal import head_lines

    path = tmp_path / "billed.jsonl"
    with path.open("w") as out:
        native_format.write(billed_trace(miss_at=6), out)
    result = replay_trace(str(path), ["none"], tokenizer="chars4", calibrate=True)
    block = result.manifest["calibration"]["predicted"]
    alone = predict(billed_trace(miss_at=6), "chars4", 0.5)
    # run.json's block is validate --predict's score of the same trace (the trace as read, not as calibrated)
    assert block["scored_requests"] == 4 and block["fit_requests"] == 4
    assert block["cost_usd"] == str(sum(c.simulated_cost_usd for c in alone.checks))
    assert block["facts"]["ceilings"] == 0 and block["cost_error"] < -0.01
    lines = head_lines(result)
    said = [i for i, line in enumerate(lines) if line.startswith("none predicted")]
    assert said and lines[said[0] - 1].startswith("none against the recorded bill")  # right beside it
    assert f"cost {block['cost_error'] * 100:+.2f}%" in lines[said[0]]


def test_the_calibration_carries_its_growth_model_past_the_last_bill():
    # the lacking session with the usage of its last 4 requests lost (an interrupted log, a crash): the
    # anchored calibration's growth model puts the 600 a turn on requests 9-12 as well
    trace = lacking_trace()
    session = trace.sessions[0]
    messages = list(session.messages)
    for i in range(17, 24, 2):  # the assistant messages of requests 9-12
        messages[i] = replace(messages[i], usage=None)
    cut = replace(trace, sessions=(replace(session, messages=tuple(messages)),))
    cal = calibration(cut, "chars4")
    assert cal.growth_model is not None and cal.growth_from == {"l": 9}
    assert cal.to_json()["growth_model"]["missing_tokens"] == 7 * HIDDEN  # requests 2-8 re-anchored
    applied = cal.apply(cut)
    carried = [m.extra.get("anchor_tokens", 0) for m in applied.sessions[0].messages]
    # what requests 9-12 first send (the previous answer and the new user message) carries 600 per request
    assert [carried[j] + carried[j + 1] for j in range(15, 23, 2)] == [HIDDEN] * 4
    assert any("growth model" in n for n in cal.notes)
    # a complete log: no model, nothing carried
    assert calibration(billed_trace(), "chars4").growth_model is None
