"""The incremental accounting index: a file unchanged since it was read is served from the index, and an
appended, rewritten (same size and time), moved or corrupt one, or a new ctxsim version, reads it again;
what is served totals exactly what reading gives."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from session_makers import Step, claude_code, unix
from typer.testing import CliRunner

import ctxsim
from ctxsim.analysis import accounting as acc
from ctxsim.analysis.file_index import Index
from ctxsim.cli import app

T0 = unix("2026-02-03T09:00:00Z")
STEPS = [Step(T0 + 60 * i, uncached=900 + i, read=4000 * i, w5=1200, out=40 + i) for i in range(4)]


def home(root: Path) -> list[tuple[str, str | None]]:
    claude_code(root / "p" / "a.jsonl", "sa", "/home/u/shop", STEPS)
    claude_code(root / "p" / "b.jsonl", "sb", "/home/u/api", STEPS[:2])
    return [(str(root / "p" / "a.jsonl"), None), (str(root / "p" / "b.jsonl"), None)]


def summary(corpus: acc.Corpus) -> tuple[object, ...]:
    t = acc.totals(corpus.charges)
    return (t.requests, t.input_tokens, t.cache_read_tokens, t.output_tokens, t.cost_usd, corpus.files,
            corpus.sessions, tuple(corpus.notes), tuple((b.session, b.cause, b.rebilled_usd) for b in corpus.breaks))


def run(inputs: list[tuple[str, str | None]], root: Path) -> tuple[acc.Corpus, Index]:
    index = Index(str(root))
    return acc.read_corpus(inputs, False, "/home/u", index), index


def test_an_unchanged_home_is_served_whole_and_totals_what_reading_gives(tmp_path: Path) -> None:
    inputs = home(tmp_path / "h")
    fresh = acc.read_corpus(inputs, False, "/home/u")
    first, index = run(inputs, tmp_path / "ix")
    assert (index.read, index.served) == (2, 0)
    second, index = run(inputs, tmp_path / "ix")
    assert (index.read, index.served) == (0, 2)
    assert summary(fresh) == summary(first) == summary(second)
    assert [(c.ts_s, c.session, c.project, c.model, c.cost_usd) for c in second.charges] == \
        [(c.ts_s, c.session, c.project, c.model, c.cost_usd) for c in fresh.charges]


def test_an_appended_file_is_read_again(tmp_path: Path) -> None:
    inputs = home(tmp_path / "h")
    run(inputs, tmp_path / "ix")
    longer = claude_code(tmp_path / "other.jsonl", "sa", "/home/u/shop", [*STEPS, Step(T0 + 900, out=77)])
    with open(inputs[0][0], "a", encoding="utf-8") as handle:  # the same file, one request longer
        handle.write(longer.read_text(encoding="utf-8").splitlines(keepends=True)[-1])
    corpus, index = run(inputs, tmp_path / "ix")
    assert (index.read, index.served) == (1, 1)
    assert acc.totals(corpus.charges).requests == len(STEPS) + 2 + 1
    assert acc.totals(corpus.charges).output_tokens == sum(s.out for s in STEPS + STEPS[:2]) + 77


def test_a_rewrite_of_the_same_size_and_time_is_read_again(tmp_path: Path) -> None:
    inputs = home(tmp_path / "h")
    path = Path(inputs[0][0])
    run(inputs, tmp_path / "ix")
    before = os.stat(path)
    text = path.read_text(encoding="utf-8")
    assert '"output_tokens": 40' in text
    with open(path, "r+", encoding="utf-8") as handle:  # in place: same inode, same size
        handle.write(text.replace('"output_tokens": 40', '"output_tokens": 90', 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    corpus, index = run(inputs, tmp_path / "ix")
    assert (index.read, index.served) == (1, 1)
    assert acc.totals(corpus.charges).output_tokens == sum(s.out for s in STEPS + STEPS[:2]) + 50


def test_a_moved_file_is_read_again(tmp_path: Path) -> None:
    inputs = home(tmp_path / "h")
    run(inputs, tmp_path / "ix")
    moved = tmp_path / "h" / "q" / "a.jsonl"
    moved.parent.mkdir()
    os.rename(inputs[0][0], moved)
    corpus, index = run([(str(moved), None), inputs[1]], tmp_path / "ix")
    assert (index.read, index.served) == (1, 1)
    assert acc.totals(corpus.charges).requests == len(STEPS) + 2


def test_a_new_version_starts_a_new_index_and_removes_the_old(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = home(tmp_path / "h")
    _, old = run(inputs, tmp_path / "ix")
    assert os.path.isdir(old.folder)
    monkeypatch.setattr(ctxsim, "__version__", ctxsim.__version__ + ".post1")
    corpus, index = run(inputs, tmp_path / "ix")
    assert index.folder != old.folder
    assert (index.read, index.served) == (2, 0)
    assert not os.path.exists(old.folder)
    assert acc.totals(corpus.charges).requests == len(STEPS) + 2


@pytest.mark.parametrize("damage", [b"", b"{not json", b'{"stamp": 1, "entry": {}}', b"[]"])
def test_a_corrupt_entry_is_read_again_and_rewritten(tmp_path: Path, damage: bytes) -> None:
    inputs = home(tmp_path / "h")
    expected = summary(run(inputs, tmp_path / "ix")[0])
    _, index = run(inputs, tmp_path / "ix")
    entries = sorted(Path(index.folder).glob("*.json"))
    assert len(entries) == 2
    for entry in entries:
        entry.write_bytes(damage)
    corpus, index = run(inputs, tmp_path / "ix")
    assert (index.read, index.served) == (2, 0)
    assert summary(corpus) == expected
    assert run(inputs, tmp_path / "ix")[1].served == 2  # rewritten whole


def test_a_stamp_that_lies_about_an_entry_is_not_trusted(tmp_path: Path) -> None:
    inputs = home(tmp_path / "h")
    _, index = run(inputs, tmp_path / "ix")
    for entry in Path(index.folder).glob("*.json"):
        data = json.loads(entry.read_text(encoding="utf-8"))
        data["stamp"][4] = "0" * 32  # another head and tail
        entry.write_text(json.dumps(data), encoding="utf-8")
    assert run(inputs, tmp_path / "ix")[1].served == 0


def test_a_response_copied_into_another_file_counts_once_when_served(tmp_path: Path) -> None:
    inputs = home(tmp_path / "h")
    copy = tmp_path / "h" / "p" / "c.jsonl"
    copy.write_bytes(Path(inputs[0][0]).read_bytes())  # a resumed session's copy of every response
    three = [*inputs, (str(copy), None)]
    fresh = acc.read_corpus(three, False, "/home/u")
    run(three, tmp_path / "ix")
    served, index = run(three, tmp_path / "ix")
    assert index.served == 3
    assert summary(served) == summary(fresh)
    assert acc.totals(served.charges).requests == len(STEPS) + 2


def test_no_cache_neither_reads_nor_writes_the_index(tmp_path: Path) -> None:
    home(tmp_path / "h")
    env = {"CTXSIM_INDEX": str(tmp_path / "ix")}
    args = ["inspect", str(tmp_path / "h"), "--by", "day", "--json"]
    plain = CliRunner().invoke(app, [*args, "--no-cache"], env=env)
    assert plain.exit_code == 0, plain.output
    assert not (tmp_path / "ix").exists()
    first = CliRunner().invoke(app, args, env=env)
    second = CliRunner().invoke(app, args, env=env)
    assert len(list((tmp_path / "ix").glob("*/*.json"))) == 2
    assert plain.stdout == first.stdout == second.stdout
    off = CliRunner().invoke(app, args, env={"CTXSIM_INDEX": "off"})
    assert off.stdout == plain.stdout
