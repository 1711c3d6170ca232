"""`ctxsim statusline`: the transcript read incrementally (line by line, a line cut in two, a rewrite, a
corrupt state) totals exactly what `inspect`'s accounting reads from the whole file; one line out, no
typer, pandas or trace text on the way."""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

from session_makers import Step, claude_code, unix

from ctxsim.analysis import accounting as acc
from ctxsim.analysis.live import account, main

T0 = unix("2026-03-04T10:00:00Z")
STEPS = [Step(T0 + 30 * i, uncached=700 + i, read=3000 * i, w5=900, w1h=100 * (i % 2), out=30 + i) for i in range(5)]


def transcript(path: Path) -> Path:
    """A Claude Code transcript with a response logged over two lines (streamed: the output grows), a
    synthetic error message and a later copy of an earlier response."""
    claude_code(path, "s1", "/home/u/shop", STEPS)
    lines = path.read_text(encoding="utf-8").splitlines()
    assistants = [i for i, line in enumerate(lines) if json.loads(line)["type"] == "assistant"]
    first = json.loads(lines[assistants[1]])
    streamed = json.loads(lines[assistants[1]])
    first["message"]["usage"]["output_tokens"] = 1  # the placeholder of the first streamed line
    first["message"]["content"] = [{"type": "thinking", "thinking": "Hm.", "signature": "s"}]
    synthetic = json.loads(lines[assistants[2]])
    synthetic.update(requestId="req_synth", uuid="syn")
    synthetic["message"].update(model="<synthetic>", id="msg_synth")
    copy = json.loads(lines[assistants[0]])
    copy["uuid"] = "copy"
    out = [*lines[:assistants[1]], json.dumps(first), json.dumps(streamed), *lines[assistants[1] + 1:]]
    out += [json.dumps(synthetic), json.dumps(copy)]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def expected(path: Path) -> tuple[int, int, int, int, Decimal]:
    t = acc.totals(acc.read_corpus([(str(path), None)], False, "/home/u").charges)
    return t.requests, t.input_tokens, t.cache_read_tokens, t.output_tokens, t.cost_usd


def got(path: Path, state: Path) -> tuple[int, int, int, int, Decimal]:
    s = account(str(path), None, str(state))
    t = s.totals
    return t["requests"], t["input_tokens"], t["cache_read_tokens"], t["output_tokens"], Decimal(s.cost_usd)


def test_read_a_few_bytes_at_a_time_it_totals_what_inspect_reads(tmp_path: Path) -> None:
    whole = transcript(tmp_path / "whole.jsonl")
    want = expected(whole)
    assert want[0] == len(STEPS)
    assert want[3] == sum(s.out for s in STEPS)
    data = whole.read_bytes()
    growing = tmp_path / "growing.jsonl"
    growing.write_bytes(b"")
    cuts = [*list(range(0, len(data), 997)), len(data)]
    for a, b in itertools.pairwise(cuts):  # lines cut anywhere, as a live transcript is
        with open(growing, "ab") as handle:
            handle.write(data[a:b])
        got(growing, tmp_path / "state")
    assert got(growing, tmp_path / "state") == want


def test_a_rewritten_transcript_is_read_again(tmp_path: Path) -> None:
    path = transcript(tmp_path / "t.jsonl")
    got(path, tmp_path / "state")
    claude_code(path, "s1", "/home/u/shop", STEPS[:2])  # shorter, another first line
    assert got(path, tmp_path / "state") == expected(path)
    assert got(path, tmp_path / "state")[0] == 2


def test_a_corrupt_state_is_rebuilt(tmp_path: Path) -> None:
    path = transcript(tmp_path / "t.jsonl")
    got(path, tmp_path / "state")
    for state in (tmp_path / "state").glob("*.json"):
        state.write_text('{"format": 1, "files": {"x": 3}, "totals": []}', encoding="utf-8")
    assert got(path, tmp_path / "state") == expected(path)


def test_one_line_from_claude_codes_json(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = transcript(tmp_path / "t.jsonl")
    stdin = {"session_id": "s1", "transcript_path": str(path), "cwd": "/home/u/shop",
             "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
             "context_window": {"context_window_size": 1_000_000}}
    out = io.StringIO()
    assert main(io.StringIO(json.dumps(stdin)), out) == 0
    cost = expected(path)[4].quantize(Decimal("0.01"))
    last = STEPS[-1].prompt
    assert out.getvalue() == (f"${cost} | context {last / 1000:.0f}k/1.0M ({last / 1_000_000 * 100:.0f}%) | "
                              f"cache hit {sum(s.read for s in STEPS) / sum(s.prompt for s in STEPS) * 100:.0f}% | "
                              f"{len(STEPS)} requests\n")
    bad = io.StringIO()
    assert main(io.StringIO("{nope"), bad) == 2
    assert bad.getvalue().startswith("ctxsim: stdin is not JSON") and bad.getvalue().count("\n") == 1


def test_the_command_loads_no_framework_and_prints_no_trace_text(tmp_path: Path) -> None:
    path = transcript(tmp_path / "t.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-3]), encoding="utf-8")
    probe = ("import json, sys\nsys.argv = ['ctxsim', 'statusline']\nfrom ctxsim.__main__ import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\nsys.stdout.flush()\n"
             "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n")

    def run() -> tuple[str, set[str]]:
        done = subprocess.run([sys.executable, "-c", probe], input=json.dumps({"transcript_path": str(path)}),
                              capture_output=True, text=True, check=True,
                              env={"XDG_CACHE_HOME": str(tmp_path / "c"), "PATH": "/usr/bin:/bin"})
        return done.stdout, set(json.loads(done.stderr.strip().splitlines()[-1]))

    run()  # the first call fills the price cache (genai-prices, pydantic) and reads the whole transcript
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(lines[-3:]))
    out, loaded = run()  # the transcript grew: the new lines read and priced
    assert not {"typer", "click", "rich", "pandas", "matplotlib", "pydantic", "tiktoken", "genai_prices"} & \
        {name.split(".")[0] for name in loaded}
    assert "ctxsim.pricing.prices" in loaded
    assert out.count("\n") == 1 and out.startswith("$")
    assert "step" not in out and "done" not in out
    out_again, loaded = run()  # nothing appended: printed from the state alone
    assert out_again == out
    assert "ctxsim.pricing.prices" not in loaded and "decimal" in loaded
