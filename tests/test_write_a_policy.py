"""docs/write-a-policy.md runs as written: its policy module (imported from a file, as a user's package
would be) registers `dedupe` against the contract of ctxsim/policies/base.py alone, and replaying small
sessions shows its edits: which messages become notices, at which request; what its registration declares
puts it in `sweep --budgets` and `tune --family`."""

from __future__ import annotations

import ast
import importlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from helpers import T0, replay
from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.model import Message, Session, ToolCall, Trace, format_ts
from ctxsim.policies import base
from ctxsim.policies.spec import resolve

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "write-a-policy.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)


@pytest.fixture
def dedupe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The page's first Python block saved as a module and imported: `dedupe` registered for this test only."""
    from ctxsim.policies import _REGISTRY, policies

    policies()  # the built-in policies loaded first, so that the copies below hold them
    monkeypatch.setattr(_REGISTRY, "_items", dict(_REGISTRY._items))
    monkeypatch.setattr(_REGISTRY, "_modules", dict(_REGISTRY._modules))
    (tmp_path / "dedupe_example.py").write_text(_blocks("python")[0], encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("dedupe_example")
    sys.modules.pop("dedupe_example", None)


def _turn(n: int, tool: str, output: str, ts: float) -> list[Message]:
    call = ToolCall(f"c{n}", tool, {"path": "src/billing/money.py"} if tool == "read_file" else {"command": tool})
    return [Message("assistant", f"step {n}", ts=format_ts(ts), tool_calls=(call,)),
            Message("tool", output, ts=format_ts(ts + 1), tool_call_id=f"c{n}", name=tool)]


def _session(sid: str, outputs: list[tuple[str, str]]) -> Session:
    messages = [Message("user", "Fix the rounding bug.", ts=format_ts(T0))]
    for n, (tool, output) in enumerate(outputs, start=1):
        messages += _turn(n, tool, output, T0 + 10 * n)
    messages.append(Message("assistant", "Done.", ts=format_ts(T0 + 10 * len(outputs) + 5)))
    return Session(id=sid, system="You are a coding agent.", messages=tuple(messages))


FILE = "def round_total(amount):\n    return amount.quantize(CENT)\n" * 40  # ~2,400 chars: 600 chars4 tokens
STATUS = " M src/billing/money.py\n" * 30
OK = "ok"  # repeated, but under min_tokens


def _recording(policy):  # type: ignore[no-untyped-def]
    """The policy, its decisions recorded: (request, session index of each message it names, new text)."""
    seen: list[tuple[int, list[int], list[str]]] = []
    decide = policy.decide

    def recorded(view):  # type: ignore[no-untyped-def]
        edits = decide(view)
        changes = [c for e in edits for c in e.changes]
        if changes:
            seen.append((view.request, [c.item.origin for c in changes], [c.message.content for c in changes]))
        return edits

    policy.decide = recorded
    return policy, seen


def test_the_policy_block_is_under_70_lines_and_uses_only_the_contract():
    code = _blocks("python")[0]
    assert len(code.splitlines()) < 70
    tree = ast.parse(code)
    imported = {(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    ctxsim_names = {(m, n) for m, n in imported if m and m.startswith("ctxsim")}
    assert {n for m, n in ctxsim_names if m == "ctxsim.policies.base"} <= set(base.__all__)
    # besides the contract: only registration, the parameters' documentation and the searched thresholds
    assert {(m, n) for m, n in ctxsim_names if m != "ctxsim.policies.base"} == {
        ("ctxsim.policies", "PolicyInfo"), ("ctxsim.policies", "register"), ("ctxsim.params", "field_doc"),
        ("ctxsim.params", "TRIGGERS")}
    assert ".history" not in code and "._" not in code  # no history internals, nothing private


def test_the_page_registers_dedupe_with_its_parameter(dedupe: ModuleType):
    from ctxsim.policies import policies

    info = policies()["dedupe"]
    assert info.factory is dedupe.DedupePolicy and info.module == "dedupe_example"
    shown = CliRunner().invoke(app, ["policies", "show", "dedupe"])
    assert shown.exit_code == 0 and "min_tokens (int, default 100)" in shown.output
    assert resolve(["dedupe:min_tokens=500"])[0].policy.params.min_tokens == 500
    with pytest.raises(Exception, match=r"min_tokens.* must not be negative"):
        resolve(["dedupe:min_tokens=-1"])


def test_dedupe_replaces_the_older_of_two_identical_outputs_at_the_next_request(dedupe: ModuleType):
    first = _session("s1", [("read_file", FILE), ("bash", STATUS), ("read_file", FILE), ("bash", OK),
                            ("bash", OK), ("read_file", FILE), ("read_file", FILE + "# changed\n")])
    # a second session repeats the first one's output: start() forgot it, so its first copy stays
    second = _session("s2", [("read_file", FILE), ("bash", STATUS), ("bash", STATUS)])
    policy, seen = _recording(resolve(["dedupe"])[0].policy)
    run = replay(Trace("t", (first, second)), policy)
    notice = dedupe.NOTICE.format(tool="read_file")
    # session 1: messages are 0 user, then (assistant, tool) pairs: the outputs are at 2, 4, 6 ... 14;
    # the read at 6 repeats the one at 2: request 4 (the assistant at 7) replaces 2; the read at 12
    # repeats 6: request 7 replaces 6. The two "ok"s are under min_tokens; the read at 14 differs.
    # session 2 (requests 9-12): the status at 6 repeats 4: request 12 replaces session index 4.
    assert seen == [(4, [2], [notice]), (7, [6], [notice]), (12, [4], [dedupe.NOTICE.format(tool="bash")])]
    events = [(e.request, e.session, e.kind, e.messages) for e in run.events if e.policy == "dedupe"]
    assert events == [(4, "s1", "dedupe", 1), (7, "s1", "dedupe", 1), (12, "s2", "dedupe", 1)]
    assert all(e.tokens_after < e.tokens_before for e in run.events if e.policy == "dedupe")
    # the prompt shrinks from the request after the first notice on, against the unmanaged replay
    plain = replay(Trace("t", (first, second)), "none")
    assert [r.input_tokens for r in run.rows][:3] == [r.input_tokens for r in plain.rows][:3]
    assert run.rows[3].input_tokens < plain.rows[3].input_tokens


def test_dedupe_after_clear_sees_what_clear_stubbed(dedupe: ModuleType):
    """In a pipeline, observe() is told of the earlier stage's stubs too: a read whose older copy clear has
    already stubbed repeats nothing left in the prompt, so dedupe leaves it; the read after it does repeat it."""
    others = [FILE.replace("round_total", f"f{i}") for i in range(3)]
    outputs = [("read_file", FILE)] + [("read_file", text) for text in others] + [("read_file", FILE)] * 2
    # session indexes: 0 the user, then (assistant, output) pairs: outputs at 2, 4, 6, 8, 10, 12
    trace = Trace("t", (_session("s", outputs),))
    alone, seen_alone = _recording(resolve(["dedupe"])[0].policy)
    replay(trace, alone)
    notice = dedupe.NOTICE.format(tool="read_file")
    assert seen_alone == [(6, [2], [notice]), (7, [10], [notice])]
    pipeline = resolve(["clear:trigger=2000,keep=1+dedupe"])[0].policy
    _, seen = _recording(pipeline.stages[1])
    run = replay(trace, pipeline)
    # clear, past 2,000 tokens at request 5, stubs every result but the newest: the first read (2) among them
    assert [(e.request, e.policy, e.messages) for e in run.events] == [(5, "clear", 3), (7, "dedupe", 1)]
    assert seen == [(7, [10], [notice])]  # not (6, [2]): that copy was already a stub


def test_the_pages_python_api_block_runs(dedupe: ModuleType, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(ROOT)
    exec(compile(_blocks("python")[1], str(PAGE), "exec"), {"__name__": "page"})
    out = capsys.readouterr().out
    assert "dedupe:min_tokens=50" in out and re.search(r"\d+\s+dedupe\s+1\s", out)


def _trace_file(path: Path) -> Path:
    """A native trace of two sessions whose tool outputs repeat (the sessions of the test above)."""
    from ctxsim.formats.native import write

    first = _session("s1", [("read_file", FILE), ("bash", STATUS), ("read_file", FILE), ("read_file", FILE)])
    second = _session("s2", [("bash", STATUS), ("read_file", FILE), ("bash", STATUS)])
    with path.open("w", encoding="utf-8") as out:
        write(Trace("t", (first, second)), out)
    return path


def test_sweep_budgets_set_the_pages_trigger(dedupe: ModuleType, tmp_path: Path):
    trace = _trace_file(tmp_path / "repeats.jsonl")
    done = CliRunner().invoke(app, ["sweep", str(trace), "--policies", "none,dedupe", "--budgets", "1k,3k",
                                    "--window", "8000", "--tokenizer", "chars4", "--no-loss", "-j", "1", "--json"])
    assert done.exit_code == 0, done.output
    manifest = json.loads(done.output)["manifest"]
    entry = next(p for p in manifest["policies"] if p["label"] == "dedupe")
    assert entry["takes_budget"] and manifest["budget_params"]["dedupe"] == "trigger"
    assert {label: cell["trigger"] for label, cell in entry["cells"].items()} == {"1k": 1_000, "3k": 3_000}
    assert {row["budget"] for row in json.loads(done.output)["policies"] if row["policy"] == "dedupe"} == {"1k", "3k"}


def test_tune_searches_the_pages_space(dedupe: ModuleType, tmp_path: Path):
    trace = _trace_file(tmp_path / "repeats.jsonl")
    done = CliRunner().invoke(app, ["tune", str(trace), "--family", "dedupe", "--trials", "4", "--seed", "2",
                                    "--budget", "4k", "--tokenizer", "chars4", "--all", "--json", "-j", "1"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["family"] == "dedupe" and data["how"] == "random: 4 of 24 settings (seed 2)"
    for trial in data["trials"]:
        values, params = trial["values"], trial["params"][0]
        assert set(values) == {"trigger", "min_tokens"} and params["min_tokens"] in (50, 100, 500)
        # a threshold is a fraction of the limit, the --budget
        assert params["trigger"] == max(1, int(values["trigger"]["fraction_of_limit"] * 4_000))
    assert data["limit_tokens"] == [4_000]
