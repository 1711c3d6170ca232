"""Policy specs: pipelines, presets with overrides, TOML policy files, Anthropic context_management JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_jsonl
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.errors import CtxsimError
from ctxsim.policies.spec import resolve, split_list
from ctxsim.presets import Preset, register


def test_split_list_keeps_parameters_with_their_spec():
    assert split_list("none,clear:trigger=30000,keep=3,compact") == ["none", "clear:trigger=30000,keep=3", "compact"]
    assert split_list("clear:exclude_tools=[a,b],keep=2, none") == ["clear:exclude_tools=[a,b],keep=2", "none"]
    assert split_list("clear:trigger=5+none,none") == ["clear:trigger=5+none", "none"]


def test_pipeline_spec():
    (choice,) = resolve(["clear:trigger=30000+clear:trigger=50000,keep=1"])
    assert [s.params.trigger for s in choice.policy.stages] == [30000, 50000]
    assert choice.policy.stages[1].params.keep == 1


def test_preset_with_override():
    register(Preset("test-preset", "for tests", "tests", ("clear:trigger=40000,keep=2", "none"),
                    tokenizer="chars4", module="tests"))
    (choice,) = resolve(["test-preset:keep=5"])
    assert choice.preset is not None and choice.preset.tokenizer == "chars4"
    assert choice.policy.stages[0].params.keep == 5 and choice.policy.stages[0].params.trigger == 40000
    with pytest.raises(CtxsimError, match="unknown parameter 'kep'"):
        resolve(["test-preset:kep=5"])


def test_toml_policy_file(tmp_path: Path):
    path = tmp_path / "policies.toml"
    path.write_text("""
[policies.tight]
policy = "clear"
trigger = 30000
keep = 2
exclude_tools = ["notes_read"]

[policies.layered]
stages = ["clear:trigger=30000", { policy = "clear", trigger = 60000, keep = 1 }]
""", encoding="utf-8")
    tight, layered = resolve([str(path)])
    assert tight.label == "tight" and tight.policy.params.exclude_tools == ("notes_read",)
    assert [s.params.trigger for s in layered.policy.stages] == [30000, 60000]
    (only,) = resolve([f"{path}#layered"])
    assert only.label == "layered"
    with pytest.raises(CtxsimError, match="no policy named 'nope'"):
        resolve([f"{path}#nope"])
    bad = tmp_path / "bad.toml"
    bad.write_text('[policies.x]\npolicy = "clear"\ntriger = 3\n', encoding="utf-8")
    with pytest.raises(CtxsimError, match=r"policies\.x: policy clear: unknown parameter 'triger'"):
        resolve([str(bad)])


def test_anthropic_context_management_json(tmp_path: Path):
    path = tmp_path / "cm.json"
    path.write_text(json.dumps({"context_management": {"edits": [{
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": 30000},
        "keep": {"type": "tool_uses", "value": 3},
        "clear_at_least": {"type": "input_tokens", "value": 10000},
        "exclude_tools": ["notes_read"],
    }]}}), encoding="utf-8")
    (choice,) = resolve([str(path)])
    p = choice.policy.params
    assert (choice.policy.name, p.trigger, p.keep, p.clear_at_least, p.exclude_tools) == \
        ("clear", 30000, 3, 10000, ("notes_read",))
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"edits": [{"type": "forget_everything_2099"}]}), encoding="utf-8")
    with pytest.raises(CtxsimError, match="unknown context_management edit type"):
        resolve([str(wrong)])


def test_compare_cli_table_and_bad_policy(tmp_path: Path, tiny_records):
    trace = write_jsonl(tmp_path / "t.jsonl", tiny_records)
    runner = CliRunner()
    result = runner.invoke(app, ["compare", str(trace), "--policies", "clear:trigger=10,keep=0", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [r["policy"]["name"] for r in data["runs"]] == ["none", "clear"]  # none added as the baseline
    bad = runner.invoke(app, ["compare", str(trace), "--policies", "clear:keep=lots"])
    assert bad.exit_code == 2 and "'keep' must be int" in bad.stderr
    empty = runner.invoke(app, ["compare", str(trace), "--policies", " , "])
    assert empty.exit_code == 2 and "names no policy to compare" in empty.stderr


def test_compare_output_json_file_is_the_run_artefact_alone(tmp_path: Path, tiny_records):
    from ctxsim.replay.run import RunResult

    trace = write_jsonl(tmp_path / "t.jsonl", tiny_records)
    out = tmp_path / "runs" / "main.json"
    result = CliRunner().invoke(app, ["compare", str(trace), "--policies", "clear:trigger=10,keep=0", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_file() and sorted(p.name for p in out.parent.iterdir()) == ["main.json"]  # no bundle beside it
    assert [r.policy["label"] for r in RunResult.load(out).runs] == ["none", "clear:trigger=10,keep=0"]


def test_replay_calibrate_records_the_fit(tmp_path: Path):
    """`--calibrate` fits the hidden prefix from recorded usage and puts the fit in the manifest."""
    from ctxsim.formats import native
    from ctxsim.model import Message, Session, Trace, Usage
    from ctxsim.tokens import TokenCounter, get_tokenizer
    from ctxsim.tokens.counting import Framing, MessageSizer

    # A session whose recorded prompts are exactly the counted prompt plus a 5,000-token hidden prefix.
    sizer = MessageSizer(TokenCounter(get_tokenizer("o200k_base")), Framing())
    messages: list[Message] = []
    total = 0
    for i in range(8):
        user = Message("user", f"step {i}: " + "please look at the invoice totals " * (5 + 3 * i))
        messages.append(user)
        total += sizer.message(user)
        reply = Message("assistant", f"ok {i}", usage=Usage(input_tokens=total + 5000, output_tokens=5))
        messages.append(reply)
        total += sizer.message(reply)
    path = tmp_path / "cal.jsonl"
    with path.open("w", encoding="utf-8") as out:
        native.write(Trace("cal", (Session(id="cal", messages=tuple(messages)),)), out)
    runner = CliRunner()
    result = runner.invoke(app, ["replay", str(path), "--calibrate", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    fit = data["manifest"]["calibration"]
    assert abs(fit["hidden_prefix_tokens"] - 5000) <= 10 and abs(fit["scale"] - 1.0) < 0.01
    plain = json.loads(runner.invoke(app, ["replay", str(path), "--no-calibrate", "--json"]).stdout)
    gap = data["runs"][0]["totals"]["input_tokens"] - plain["runs"][0]["totals"]["input_tokens"]
    assert abs(gap - 8 * 5000) <= 8 * 10  # every request now carries the hidden prefix
