"""`ctxsim tune`'s parameter spaces and what it writes: the policy file loads back, the
context_management JSON has the API's shape and loads back, bad input is one line and exit 2."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.errors import ParameterError
from ctxsim.policies import make_policy, policies
from ctxsim.policies.spec import resolve
from ctxsim.tune.outputs import context_management, json_text, table, toml_text, trials_csv
from ctxsim.tune.search import Measured, Outcome, Target, Trial
from ctxsim.tune.space import Rel, Same, concrete, grid_size, settings, shown, spaces

SPACES = spaces()  # as the policies declare them in their registrations


@pytest.mark.parametrize("family", sorted(SPACES))
def test_every_space_names_the_policys_own_parameters_and_every_value_builds(family):
    fields = {f.name for f in dataclasses.fields(policies()[family].params)}
    space = SPACES[family]
    assert set(space) <= fields, f"{family}: {set(space) - fields} are not parameters of the policy"
    for name, values in space.items():
        assert len(set(values)) == len(values), f"{family}.{name}: a value given twice"
        for value in values:
            setting = {n: v[0] for n, v in space.items()} | {name: value}
            if isinstance(value, Same):
                continue
            try:
                make_policy(family, concrete(setting, 200_000))
            except ParameterError:  # only server_compact refuses: a trigger under the API's 50,000
                assert family == "server_compact" and name == "trigger" and int(value.fraction * 200_000) < 50_000


def test_grid_when_it_fits_random_draw_otherwise_deterministic_per_seed():
    size = grid_size("mask")
    assert size == len(SPACES["mask"]["keep"])
    every, how = settings("mask", 100, 0)
    assert [s["keep"] for s in every] == list(SPACES["mask"]["keep"]) and how.startswith("grid")
    a, how_a = settings("clear", 20, 7)
    b, _ = settings("clear", 20, 7)
    c, _ = settings("clear", 20, 8)
    assert a == b and a != c and how_a.startswith("random: 20 of")
    assert len({shown(s) for s in a}) == 20  # distinct settings
    whole, _ = settings("clear", grid_size("clear"), 0)
    assert len({shown(s) for s in whole}) == grid_size("clear")
    assert all(s in whole for s in a)


def test_thresholds_scale_with_the_reference_and_derived_ones_follow():
    setting = {"trigger": Rel(0.5), "compact_above": Same("trigger"), "keep_recent": 4}
    assert concrete(setting, 90_000) == {"trigger": 45_000, "compact_above": 45_000, "keep_recent": 4}
    assert shown(setting) == "trigger=50% keep_recent=4"


def _outcome(tmp_path: Path, family: str, params: dict, how: str = "grid: all 3 settings") -> Outcome:
    m = Measured(Decimal("1.5"), Decimal("1.75"), 3, 2, 1, 90_000, False, 4)
    worse = Measured(Decimal("1.9"), Decimal("2.0"), 3, 2, 0, 95_000, False, 2)
    over = Measured(Decimal("1.0"), Decimal("1.0"), 0, 0, 0, 250_000, True, 1)
    trials = [Trial(n, dict(params), [params], measured) for n, measured in ((1, m), (2, worse), (3, over))]
    target = Target(str(tmp_path / "t.jsonl"), None, None, 200_000, 180_000, None)
    return Outcome(family, how, trials, Measured(Decimal(2), Decimal(2), 1, 1, 0, 1, False, 0), None, 3, [0],
                   0, [target])


def test_the_recommended_policy_file_loads_back_with_the_same_parameters(tmp_path):
    values = {"trigger": 90_000, "keep": 2, "clear_at_least": 5_000, "clear_tool_inputs": True,
              "exclude_tools": ("memory", 'q"uote')}
    text = toml_text(_outcome(tmp_path, "clear", values), None, 0)
    assert text is not None
    path = tmp_path / "tuned.toml"
    path.write_text(text)
    (choice,) = resolve([f"{path}#clear-tuned"])
    assert choice.label == "clear-tuned"
    assert choice.policy.params == make_policy("clear", values).params
    compact = {"trigger": 60_000, "compact_above": 60_000, "keep_recent": 6, "summarizer": "llm",
               "compact_at": None, "keep_fraction": None}
    path.write_text(toml_text(_outcome(tmp_path, "compact", compact), None, 0))
    (choice,) = resolve([f"{path}#compact-tuned"])
    assert choice.policy.params == make_policy("compact", compact).params


def test_context_management_json_has_the_apis_shape_and_loads_back(tmp_path):
    values = {"trigger": 90_000, "keep": 2, "clear_at_least": 5_000, "clear_tool_inputs": True,
              "exclude_tools": ("memory",)}
    data, why = context_management(_outcome(tmp_path, "clear", values))
    assert why == ""
    assert data == {"context_management": {"edits": [{
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": 90_000},
        "keep": {"type": "tool_uses", "value": 2},
        "clear_at_least": {"type": "input_tokens", "value": 5_000},
        "exclude_tools": ["memory"],
        "clear_tool_inputs": True}]}}
    path = tmp_path / "cm.json"
    path.write_text(json_text(data))
    (choice,) = resolve([str(path)])
    assert choice.policy.params == make_policy("clear", values).params
    # clear_at_least 0 is the API's default (none): left out, and loads back to 0
    data, _ = context_management(_outcome(tmp_path, "clear", {"trigger": 50_000, "keep": 0, "clear_at_least": 0}))
    assert "clear_at_least" not in data["context_management"]["edits"][0]
    server = {"trigger": 120_000, "pause_after_compaction": True}
    data, _ = context_management(_outcome(tmp_path, "server_compact", server))
    assert data == {"context_management": {"edits": [{
        "type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 120_000},
        "pause_after_compaction": True}]}}
    path.write_text(json_text(data))
    assert resolve([str(path)])[0].policy.params == make_policy("server_compact", server).params
    data, why = context_management(_outcome(tmp_path, "compact", {"trigger": 60_000}))
    assert data is None and "client" in why


def test_front_table_and_trials_csv(tmp_path):
    outcome = _outcome(tmp_path, "clear", {"keep": 2})
    data = table(outcome)
    assert [r[0] for r in data.rows] == ["1", "-"]  # the front, then the bound
    assert data.rows[0][-1] == "★" and data.rows[-1][1] == "oracle (the bound)"
    every = table(outcome, every=True)
    assert [r[-1] for r in every.rows] == ["★", "", "overflows", "bound"]
    lines = trials_csv(outcome).splitlines()
    assert lines[0].startswith("trial,keep,cost_usd,refetch_cost_usd,recall_misses")
    assert lines[1] == "1,2,1.5,1.75,3,2,1,90000,false,true,true,"
    assert lines[3].split(",")[8] == "true"  # trial 3 overflows


def run_cli(*args: str):
    result = CliRunner().invoke(app, ["tune", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize(("args", "message"), [
    (["--family", "nosuch"], "no parameter space for 'nosuch'"),
    (["--family", "clear", "--trials", "0"], "--trials must be at least 1"),
    (["--family", "clear", "--budget", "lots"], "--budget: 'lots' is neither tokens"),
    (["--family", "clear", "--budget", "50k,60k"], "--budget: give one budget"),
    (["--family", "clear", "--budget", "150%"], "--budget: '150%': a fraction of the window must be"),
    (["--family", "clear", "--max-misses", "-1"], "--max-misses must not be negative"),
    (["--family", "clear", "-o", "out.json"], "give FILE.toml"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    trace = Path(__file__).parent / "fixtures" / "tiny"
    given = next(p for p in sorted(trace.iterdir()) if p.is_file())
    code, out = run_cli(str(given), *args)
    assert code == 2, out
    assert message in out and len(out.strip().splitlines()) == 1, out


def test_a_missing_trace_is_one_line(tmp_path):
    code, out = run_cli(str(tmp_path / "nope.jsonl"), "--family", "clear")
    assert code == 2 and "no such file" in out and len(out.strip().splitlines()) == 1


def test_an_unsafe_output_is_refused_before_any_work(tmp_path):
    trace = next(p for p in sorted((Path(__file__).parent / "fixtures" / "tiny").iterdir()) if p.is_file())
    (tmp_path / "elsewhere.png").write_bytes(b"keep me")
    (tmp_path / "tuned.pareto.png").symlink_to(tmp_path / "elsewhere.png")
    code, out = run_cli(str(trace), "--family", "mask", "-o", str(tmp_path / "tuned.toml"))
    assert code == 2 and "symbolic link" in out and len(out.strip().splitlines()) == 1, out
    assert not (tmp_path / "tuned.toml").exists() and (tmp_path / "elsewhere.png").read_bytes() == b"keep me"
