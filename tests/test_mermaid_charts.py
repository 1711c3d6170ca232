"""Mermaid charts in report.md and the diff: the blocks parse as the xychart-beta we emit, values are run.json's."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

from typer.testing import CliRunner

from ctxsim.cli import app
from ctxsim.reports._mermaid import MAX_POINTS, context_chart, cost_chart, quote, sample
from tests.helpers import T0, replay, session_of, turn_messages

TINY = Path(__file__).parent / "fixtures" / "tiny" / "native.jsonl"
LABEL = r'"([^"\n]*)"'
NUMS = r"\[([-0-9., ]*)\]"


def parse(block: list[str]) -> dict:
    """The grammar the charts use: an init line, the header, a title, an x-axis (a quoted title and numbers, or
    quoted categories), a y-axis with a range, then `line "name" [...]` or `bar [...]` statements."""
    assert block[0] == "```mermaid" and block[-1] == "```", block
    assert re.fullmatch(r'%%\{init: \{"themeVariables": \{"xyChart": \{"plotColorPalette": "[#0-9a-f, ]+"\}\}\}\}%%',
                        block[1]), block[1]
    assert block[2] == "xychart-beta"
    title = re.fullmatch(rf"    title {LABEL}", block[3])
    assert title, block[3]
    x_numbers = re.fullmatch(rf"    x-axis {LABEL} {NUMS}", block[4])
    x_categories = re.fullmatch(r'    x-axis \[((?:"[^"\n]*"(?:, )?)+)\]', block[4])
    assert x_numbers or x_categories, block[4]
    y = re.fullmatch(rf"    y-axis {LABEL} 0 --> ([0-9.]+)", block[5])
    assert y, block[5]
    out: dict = {"title": title[1], "y_top": Decimal(y[2]), "lines": [], "bars": []}
    if x_numbers:
        out["x"] = [int(v) for v in x_numbers[2].split(", ")]
    else:
        out["x"] = re.findall(r'"([^"]*)"', x_categories[1])  # type: ignore[index]
    for line in block[6:-1]:
        plot = re.fullmatch(rf"    line {LABEL} {NUMS}", line)
        if plot:
            out["lines"].append((plot[1], [int(v) for v in plot[2].split(", ")]))
            continue
        bar = re.fullmatch(rf"    bar {NUMS}", line)
        assert bar, line
        out["bars"].append([Decimal(v) for v in bar[1].split(", ")])
    for _, values in out["lines"]:
        assert len(values) == len(out["x"])
    for values in out["bars"]:
        assert len(values) == len(out["x"])
    return out


def blocks(text: str) -> list[dict]:
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line == "```mermaid"]
    return [parse(lines[i: lines.index("```", i + 1) + 1]) for i in starts]


def _runs_json(path: Path) -> list[dict]:
    runs = json.loads(path.read_text(encoding="utf-8"))["runs"]
    out = []
    for run in runs:
        cols, values = run["rows"]["columns"], run["rows"]["values"]
        rows = [dict(zip(cols, r, strict=True)) for r in zip(*values, strict=True)]
        out.append({"cost": Decimal(str(run["totals"]["cost_usd"])),
                    "context": {r["request"]: r["context_tokens"] for r in rows if r["kind"] == "request"}})
    return out


def _replay(tmp_path: Path, name: str, *policies: str) -> Path:
    out = tmp_path / name
    args = ["replay", str(TINY), *[a for p in policies for a in ("--policy", p)], "-o", str(out)]
    assert CliRunner().invoke(app, args).exit_code == 0
    return out


def test_report_md_holds_context_and_cost_charts_with_run_json_values(tmp_path: Path) -> None:
    saved = _replay(tmp_path, "run.json", "none", "clear:trigger=1500,keep=1")
    res = CliRunner().invoke(app, ["report", str(saved), "-f", "md"])
    assert res.exit_code == 0, res.output
    context, cost = blocks(res.stdout)
    runs = _runs_json(saved)
    assert [name for name, _ in context["lines"]] == ["none", "clear:trigger=1500,keep=1"]
    assert context["x"] == sorted(runs[0]["context"])  # few requests: every one drawn
    for (_, values), run in zip(context["lines"], runs, strict=True):
        assert values == [run["context"][r] for r in context["x"]]
    assert context["y_top"] == max(max(v) for _, v in context["lines"])
    assert cost["x"] == ["none", "clear:trigger=1500,keep=1"]
    assert cost["bars"] == [[run["cost"].quantize(Decimal("0.000001")) for run in runs]]
    again = CliRunner().invoke(app, ["report", str(saved), "-f", "md"]).stdout
    assert again == res.stdout


def test_diff_markdown_charts_base_and_new(tmp_path: Path) -> None:
    base = _replay(tmp_path, "base.json", "none", "clear:trigger=1500,keep=1")
    new = _replay(tmp_path, "new.json", "none", "clear:trigger=1000,keep=1")
    res = CliRunner().invoke(app, ["diff", str(base), str(new), "--md"])
    assert res.exit_code == 0, res.output
    context, cost = blocks(res.stdout)
    names = ["base none", "new none", "base clear:trigger=1500,keep=1", "new clear:trigger=1000,keep=1"]
    assert [n for n, _ in context["lines"]] == names
    assert cost["x"] == names
    b, n = _runs_json(base), _runs_json(new)
    assert cost["bars"] == [[r["cost"].quantize(Decimal("0.000001")) for r in (b[0], n[0], b[1], n[1])]]
    assert context["lines"][3][1] == [n[1]["context"][r] for r in context["x"]]


def test_a_long_run_is_sampled_to_at_most_60_points_first_and_last_kept() -> None:
    messages = [m for i in range(150) for m in turn_messages(i, "read", "x" * (40 + i * 7), T0 + i * 10, user="go")]
    run = replay(session_of(messages))
    requests = {r.request: r.context_tokens for r in run.rows if r.kind == "request"}
    assert len(requests) > 2 * MAX_POINTS
    (chart,) = blocks("\n".join(context_chart([("none", run)])))
    assert len(chart["x"]) == MAX_POINTS
    assert chart["x"][0] == min(requests) and chart["x"][-1] == max(requests)
    assert chart["lines"][0][1] == [requests[r] for r in chart["x"]]
    assert sample(7, 60) == list(range(7)) and len(set(sample(1000, 60))) == 60


def test_labels_cannot_break_the_block() -> None:
    nasty = 'a"b\n```\nc<script>;d%%e'
    assert quote(nasty) == '"a\'b_____c_script__d__e"'
    text = "\n".join(cost_chart([(nasty, Decimal("0.5")), ("ok", Decimal(0))]))
    (chart,) = blocks(text)
    assert chart["x"] == ["a'b_____c_script__d__e", "ok"] and chart["bars"] == [[Decimal("0.500000"), Decimal(0)]]
    assert "<script>" not in text and "%%" not in text.split("\n", 2)[2] and text.count("```") == 2
