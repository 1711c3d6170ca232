"""`ctxsim tune` end to end on a hand-made trace whose later answers use what earlier reads held:
byte-identical outputs for a seed and for any --jobs, the recommended policy file replays to the
trial's own numbers, the recommendation is the cheapest that stays within the limit and the misses."""

from __future__ import annotations

import csv
import io
import random
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.formats import native
from ctxsim.model import Message, Session, ToolCall, Trace
from ctxsim.policies.spec import resolve
from ctxsim.replay.api import Options

BUDGET = "6000"


def recall_trace(path: Path, turns: int = 18, seed: int = 1) -> Path:
    """Reads of modules (results of 200-1,400 tokens, chars4), each holding names only it has; every few
    turns an answer uses names read 1 to 10 turns before."""
    rng = random.Random(seed)
    m = [Message("user", "Audit the billing package and report every constant you find.")]
    for n in range(turns):
        names = [f"const_{n}_{k}" for k in range(3)]
        m.append(Message("assistant", f"Reading module {n}.",
                         tool_calls=(ToolCall(f"c{n}", "read_file", {"path": f"src/billing/mod{n}.py"}),)))
        body = "\n".join(f"{x} = {1000 + 7 * n + k}" for k, x in enumerate(names))
        m.append(Message("tool", body + " filler" * rng.randint(100, 800), tool_call_id=f"c{n}", name="read_file"))
        if n >= 2 and n % 2 == 0:
            back = rng.randint(1, min(10, n))
            m.append(Message("assistant", f"So far: const_{n - back}_0 and const_{n - back}_2."))
            m.append(Message("user", "Go on."))
    m.append(Message("assistant", "Done: const_0_1, const_5_1 and const_9_0."))
    trace = Trace("recall", (Session(id="s", system="You are a careful auditor.", messages=tuple(m),
                                     model="claude-sonnet-4-5", provider="anthropic"),))
    with path.open("w", encoding="utf-8") as out:
        native.write(trace, out)
    return path


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return recall_trace(tmp_path_factory.mktemp("tune") / "recall.jsonl")


def tune(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["tune", *args, "--tokenizer", "chars4"])
    return result.exit_code, result.stdout


def rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


@pytest.fixture(scope="module")
def tuned(trace: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("out") / "clear.toml"
    code, text = tune(str(trace), "--family", "clear", "--budget", BUDGET, "--trials", "16", "--seed", "3", "-o",
                      str(out), "--jobs", "1")
    assert code == 0, text
    return out, text


def test_same_seed_same_bytes_for_any_jobs(trace: Path, tuned: tuple[Path, str], tmp_path: Path) -> None:
    first, text = tuned
    again = tmp_path / "clear.toml"
    code, text2 = tune(str(trace), "--family", "clear", "--budget", BUDGET, "--trials", "16", "--seed", "3", "-o",
                       str(again), "--jobs", "2")
    assert code == 0, text2
    assert text2 == text
    for suffix in (".toml", ".context_management.json", ".pareto.png", ".trials.csv"):
        a = first.with_name("clear" + suffix).read_bytes()
        assert a == again.with_name("clear" + suffix).read_bytes(), suffix
    assert first.with_name("clear.pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, other = tune(str(trace), "--family", "clear", "--budget", BUDGET, "--trials", "16", "--seed", "4")
    assert code == 0 and other != text  # another seed draws other settings


def test_the_search_sees_a_trade_off(tuned: tuple[Path, str]) -> None:
    trials = rows(tuned[0].with_name("clear.trials.csv"))
    assert len(trials) == 16
    misses = {int(r["recall_misses"]) for r in trials if r["overflows"] == "false"}
    assert len(misses) > 1, "every feasible setting loses the same: the fixture tests nothing"
    assert any(r["overflows"] == "true" for r in trials)


def test_the_recommendation_is_the_cheapest_feasible_within_the_misses(tuned: tuple[Path, str]) -> None:
    trials = rows(tuned[0].with_name("clear.trials.csv"))
    feasible = [r for r in trials if r["overflows"] == "false" and not r["refused"]]
    allowed = min(int(r["recall_misses"]) for r in feasible)  # the default --max-misses
    ok = [r for r in feasible if int(r["recall_misses"]) <= allowed]
    best = min(ok, key=lambda r: (Decimal(r["refetch_cost_usd"]), int(r["recall_misses"]), int(r["trial"])))
    (chosen,) = [r for r in trials if r["recommended"] == "true"]
    assert chosen["trial"] == best["trial"]
    front = [r for r in trials if r["on_front"] == "true"]
    for r in front:  # none dominated by a feasible trial
        m, c = int(r["recall_misses"]), Decimal(r["refetch_cost_usd"])
        assert not any(int(o["recall_misses"]) <= m and Decimal(o["refetch_cost_usd"]) <= c
                       and (int(o["recall_misses"]) < m or Decimal(o["refetch_cost_usd"]) < c) for o in feasible)
    for r in feasible:  # and every feasible trial off the front is dominated by one on it
        if r["on_front"] == "false":
            assert any(int(f["recall_misses"]) <= int(r["recall_misses"])
                       and Decimal(f["refetch_cost_usd"]) <= Decimal(r["refetch_cost_usd"]) for f in front)


def test_the_recommended_policy_file_replays_to_the_same_numbers(trace: Path, tuned: tuple[Path, str]) -> None:
    from ctxsim.replay.budgets import parse_budgets
    from ctxsim.tune import search as tuning

    out, _ = tuned
    (chosen,) = [r for r in rows(out.with_name("clear.trials.csv")) if r["recommended"] == "true"]
    (choice,) = resolve([f"{out}#clear-tuned"])
    (target,) = tuning.load_targets([str(trace)], Options(tokenizer="chars4", calibrate=True), None,
                                    parse_budgets(BUDGET)[0])
    measured = tuning.measure(target, choice.policy)
    assert (format(measured.cost_usd, "f"), format(measured.refetch_cost_usd, "f"), measured.misses,
            measured.peak_context_tokens) == (chosen["cost_usd"], chosen["refetch_cost_usd"],
                                              int(chosen["recall_misses"]), int(chosen["peak_context_tokens"]))
    # and the context_management JSON is the same policy
    (api,) = resolve([str(out.with_name("clear.context_management.json"))])
    assert api.policy.params == choice.policy.params


def test_max_misses_trades_loss_for_cost(trace: Path, tmp_path: Path) -> None:
    strict, loose = tmp_path / "strict.toml", tmp_path / "loose.toml"
    for out, limit in ((strict, "0"), (loose, "1000")):
        code, text = tune(str(trace), "--family", "clear", "--budget", BUDGET, "--trials", "16", "--seed", "3",
                          "--max-misses", limit, "-o", str(out))
        assert code == 0, text
    pick = {}
    for out in (strict, loose):
        chosen = [r for r in rows(out.with_suffix("").with_name(out.stem + ".trials.csv"))
                  if r["recommended"] == "true"]
        pick[out] = chosen[0] if chosen else None
    assert pick[loose] is not None
    if pick[strict] is not None:
        assert int(pick[strict]["recall_misses"]) == 0
        assert Decimal(pick[loose]["refetch_cost_usd"]) <= Decimal(pick[strict]["refetch_cost_usd"])


def test_a_family_the_api_does_not_run_gets_no_json(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "mask.toml"
    code, text = tune(str(trace), "--family", "mask", "--budget", "20000", "--trials", "3", "-o", str(out))
    assert code == 0, text
    # on this trace every mask setting that fires costs more or misses more: the best within the allowance changes
    # nothing, so nothing is recommended (issue 29: never a no-op's policy file) and no JSON either way
    assert "nothing to gain" in text and "recommended, as" not in text
    assert not out.exists() and not out.with_name("mask.context_management.json").exists()
    from ctxsim.tune.outputs import context_management
    from ctxsim.tune.search import Outcome

    reason = context_management(Outcome("mask", "grid", [], None, None, None, [], None))[1]  # type: ignore[arg-type]
    assert reason.startswith("mask runs in the client")


def test_json_is_the_front_the_bound_and_the_recommendation(trace: Path, tuned: tuple[Path, str],
                                                              tmp_path: Path) -> None:
    """`--json`: stdout is one JSON document holding what the table, the notes and the files hold: the front and
    recommendation agree with the trials CSV of the same search, the policy file is the one -o wrote."""
    import json

    code, text = tune(str(trace), "--family", "clear", "--budget", BUDGET, "--trials", "16", "--seed", "3", "--json",
                      "--jobs", "1")
    assert code == 0, text
    data = json.loads(text)
    trials = rows(tuned[0].with_name("clear.trials.csv"))
    assert data["schema"] == "ctxsim.tune/1" and data["family"] == "clear" and data["seed"] == 3
    assert "trials" not in data  # the front only, unless --all
    front = {r["trial"] for r in trials if r["on_front"] == "true"}
    assert {str(t["trial"]) for t in data["front"]} == front
    for t in data["front"]:
        row = next(r for r in trials if r["trial"] == str(t["trial"]))
        assert t["measured"]["cost_with_refetch_usd"] == row["refetch_cost_usd"]
        assert t["measured"]["recall_misses"] == int(row["recall_misses"])
    (chosen,) = [r for r in trials if r["recommended"] == "true"]
    assert data["recommended"]["trial"] == int(chosen["trial"]) and data["recommended"]["recommended"] is True
    assert data["policy_toml"] == tuned[0].read_text()
    written = json.loads(tuned[0].with_name("clear.context_management.json").read_text())
    assert data["context_management"] == written
    assert data["bound"]["recall_misses"] <= min(t["measured"]["recall_misses"] for t in data["front"])
    assert any("oracle" in note for note in data["notes"])
    code, every = tune(str(trace), "--family", "clear", "--budget", BUDGET, "--trials", "16", "--seed", "3", "--json",
                       "--all", "--jobs", "1")
    assert code == 0 and len(json.loads(every)["trials"]) == len(trials) == 16
