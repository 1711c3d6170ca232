"""Output safety (issue 11): no `-o` destroys an input, a link or a device; every output error is one
line and exit 2; a bundle folder holds one run or the one before it, even when interrupted; an
interrupted run says what it did not write and leaves no temporary files, nor running workers; any
unexpected exception is one line asking for a bug report, never a traceback.

Special files are made in tmp_path (os.mkfifo; os.mknod of a null/full device when root may), never
the system's /dev nodes: if a refusal failed, only a node of the test's own would be replaced.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxsim._support.fileio import replace_folder
from ctxsim.cli import app

FIXTURES = Path(__file__).parent / "fixtures" / "tiny"
NATIVE = FIXTURES / "native.jsonl"
CLAUDE = FIXTURES / "claude-code.jsonl"


def invoke(*args: object, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def one_error_line(res, *parts: str) -> str:
    """The run failed with exit 2 and exactly one `ctxsim: error:` line on stderr holding every part."""
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 2, (res.exit_code, res.stderr, res.exception)
    assert len(lines) == 1 and lines[0].startswith("ctxsim: error: "), res.stderr
    assert "Traceback" not in res.stderr
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_bytes(NATIVE.read_bytes())
    return path


@pytest.fixture
def run_json(tmp_path: Path, trace: Path) -> Path:
    path = tmp_path / "run.json"
    assert invoke("replay", trace, "-p", "none", "-p", "clear", "-o", path).exit_code == 0
    return path


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Rendered once for the module (charts are the slow part): the runs of `compare --policies clear`
    (none, clear) and `compare --policies none` (none alone), and the bundle of each, to copy."""
    import shutil

    from ctxsim.reports import write_bundle
    from ctxsim.reports._common import load_run

    home = tmp_path_factory.mktemp("bundles")
    trace = home / "t.jsonl"
    shutil.copyfile(NATIVE, trace)
    out: dict[str, Path] = {"trace": trace}
    for name, policies in (("two", "clear"), ("one", "none")):
        run = home / f"{name}.json"
        res = invoke("compare", trace, "--policies", policies, "-o", run)
        assert res.exit_code == 0, res.stderr
        out[f"{name}.json"] = run
        out[name] = home / f"bundle-{name}"
        write_bundle(load_run(run), out[name])
    return out


def copy_of(bundle: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(bundle, to)
    return to


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def hidden_siblings(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}."))


# ---------------------------------------------------------------- an input is never overwritten
def test_replay_onto_its_own_trace_is_refused_and_the_trace_kept(tmp_path: Path, trace: Path):
    before = trace.read_bytes()
    one_error_line(invoke("replay", trace, "-o", trace), str(trace), "cannot write '.jsonl'")  # not a run's suffix
    named = tmp_path / "t.json"  # a trace named like a run artefact: the input check refuses it
    named.write_bytes(before)
    one_error_line(invoke("replay", named, "-o", named), str(named), "input", "--force")
    assert trace.read_bytes() == before and named.read_bytes() == before


def test_convert_onto_its_own_claude_code_log_is_refused(tmp_path: Path):
    log = tmp_path / "cc.jsonl"
    log.write_bytes(CLAUDE.read_bytes())
    one_error_line(invoke("convert", log, "-o", log), "cc.jsonl", "input")
    assert log.read_bytes() == CLAUDE.read_bytes()
    # --force: the log was read whole before the atomic write, so this is a deliberate in-place conversion
    res = invoke("convert", log, "-o", log, "--force")
    assert res.exit_code == 0, res.stderr
    assert log.read_bytes() != CLAUDE.read_bytes() and log.read_text().startswith('{"')


def test_the_same_file_through_a_hard_link_or_a_symlinked_folder_is_refused(tmp_path: Path, trace: Path):
    hard = tmp_path / "hard.jsonl"
    os.link(trace, hard)
    one_error_line(invoke("convert", trace, "-o", hard), "same file as the input")
    linked = tmp_path / "linked"
    linked.symlink_to(tmp_path, target_is_directory=True)
    one_error_line(invoke("convert", trace, "-o", linked / "t.jsonl"), "input")
    assert trace.read_bytes() == NATIVE.read_bytes()


def test_an_output_inside_an_input_folder_that_exists_is_refused(tmp_path: Path, trace: Path):
    one_error_line(invoke("convert", tmp_path, "-o", trace), "inside the input folder")
    assert trace.read_bytes() == NATIVE.read_bytes()
    res = invoke("convert", tmp_path, "-o", tmp_path / "new.jsonl")  # a new file there replaces nothing
    assert res.exit_code == 0, res.stderr


def test_diff_and_report_do_not_overwrite_their_run(run_json: Path, tmp_path: Path):
    before = run_json.read_bytes()
    one_error_line(invoke("diff", run_json, run_json, "-o", run_json), "input")
    md = tmp_path / "run.md"
    md.symlink_to(run_json)
    one_error_line(invoke("report", run_json, "-f", "md", "-o", md), "symbolic link")
    assert run_json.read_bytes() == before


def test_a_policy_file_is_an_input_too(tmp_path: Path, trace: Path):
    policy = tmp_path / "p.json"  # an Anthropic context_management file
    text = '{"edits": [{"type": "clear_tool_uses_20250919"}]}'
    policy.write_text(text, encoding="utf-8")
    one_error_line(invoke("replay", trace, "-p", str(policy), "-o", policy), "input")
    assert policy.read_text(encoding="utf-8") == text


# ---------------------------------------------------------------- links and special files
def test_a_symlink_is_refused_then_forced_writes_its_target(tmp_path: Path, trace: Path):
    target = tmp_path / "real.json"
    target.write_text("old", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(target.name)
    one_error_line(invoke("replay", trace, "-o", link), "symbolic link", "--force")
    assert link.is_symlink() and target.read_text(encoding="utf-8") == "old"
    res = invoke("replay", trace, "-o", link, "--force")
    assert res.exit_code == 0, res.stderr
    assert link.is_symlink() and os.readlink(link) == "real.json"  # the link stays a link
    assert '"schema": "ctxsim.run/2"' in target.read_text(encoding="utf-8")


def test_a_fifo_is_refused_before_anything_opens_it(tmp_path: Path, trace: Path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    # no reader: opening it for writing would block for ever, so the refusal must come first
    one_error_line(invoke("replay", trace, "-o", fifo), "FIFO")
    one_error_line(invoke("synth", "--turns", "2", "-o", fifo), "FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_forced_into_a_fifo_the_run_is_written_into_it(tmp_path: Path, trace: Path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    res = invoke("replay", trace, "-o", fifo, "--force")
    reader.join(timeout=60)
    assert res.exit_code == 0, res.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a FIFO, not replaced by a file
    assert b'"schema": "ctxsim.run/2"' in got[0]


def _device(path: Path, minor: int) -> Path:
    """A character device of our own (1:3 is null, 1:7 is full) in tmp_path; skip where mknod is not allowed."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here ({exc})")
    return path


def test_a_device_is_refused_and_stays_a_device(tmp_path: Path, trace: Path):
    null = _device(tmp_path / "null", 3)
    one_error_line(invoke("replay", trace, "-o", null), "character device", "--force")
    one_error_line(invoke("convert", trace, "-o", null), "character device")
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    res = invoke("replay", trace, "-o", null, "--force")  # written into: the node is not replaced
    assert res.exit_code == 0, res.stderr
    assert stat.S_ISCHR(os.lstat(null).st_mode)


def test_a_write_error_is_one_line(tmp_path: Path, trace: Path):
    full = _device(tmp_path / "full", 7)  # every write fails with ENOSPC
    one_error_line(invoke("replay", trace, "-o", full, "--force"), str(full), "No space left on device")
    assert stat.S_ISCHR(os.lstat(full).st_mode)


# ---------------------------------------------------------------- paths that cannot be written
def test_an_empty_output_path_is_refused_by_every_command(tmp_path: Path, trace: Path, run_json: Path,
                                                          monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    for args in (("replay", trace), ("compare", trace, "--policies", "clear"), ("convert", trace),
                 ("report", run_json), ("diff", run_json, run_json), ("synth", "--turns", "2")):
        one_error_line(invoke(*args, "-o", ""), "-o ''", "empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written into the current folder


def test_a_path_under_a_file_is_refused(trace: Path, run_json: Path):
    for args, name in ((("replay", trace), "out.json"), (("convert", trace), "out.jsonl"),
                       (("compare", trace, "--policies", "clear"), "out.json")):
        one_error_line(invoke(*args, "-o", trace / name), "is not a folder")
    one_error_line(invoke("report", run_json, "-o", run_json / "report.md"), "is not a folder")
    assert trace.read_bytes() == NATIVE.read_bytes()


def test_a_folder_where_a_file_is_expected_is_refused(tmp_path: Path, trace: Path, run_json: Path):
    folder = tmp_path / "out.json"
    folder.mkdir()
    one_error_line(invoke("replay", trace, "-o", folder), "is a folder, expected a file")
    folder_jsonl = tmp_path / "out.jsonl"
    folder_jsonl.mkdir()
    one_error_line(invoke("convert", trace, "-o", folder_jsonl), "is a folder, expected a file")
    one_error_line(invoke("compare", trace, "--policies", "clear", "-o", folder), "is a folder, expected a file")
    one_error_line(invoke("diff", run_json, run_json, "-o", folder), "is a folder, expected a file")
    # and the other way round: a bundle where a file is
    plain = tmp_path / "bundle"
    plain.write_text("mine", encoding="utf-8")
    one_error_line(invoke("report", run_json, "-o", plain), "not a folder")
    assert plain.read_text(encoding="utf-8") == "mine"
    assert list(folder.iterdir()) == []


def _unwritable_folder(tmp_path: Path) -> Path:
    """A folder this process may not create files in.

    Not root: a folder of ours with mode 0o500. Root writes through mode bits, and neither a read-only
    bind mount nor chattr +i is available or reliable here; but sysfs refuses new files even to root,
    so /sys is used when a probe shows it refuses (the probe creates nothing: O_EXCL in a folder that
    refuses), else the test is skipped.
    """
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o500)
        return folder
    try:
        fd, probe = tempfile.mkstemp(dir="/sys")
    except OSError:
        return Path("/sys")
    os.close(fd)
    os.unlink(probe)
    pytest.skip("root, and /sys accepts new files: no unwritable folder to test with")


def test_an_unwritable_folder_is_one_line(tmp_path: Path, trace: Path):
    folder = _unwritable_folder(tmp_path)
    try:
        res = invoke("replay", trace, "-o", folder / "ctxsim-test-run.json")
        one_error_line(res, "ctxsim-test-run.json", "cannot write")
        assert not (folder / "ctxsim-test-run.json").exists()
    finally:
        if folder != Path("/sys"):
            folder.chmod(0o700)


# ---------------------------------------------------------------- bundles: one run or the one before
def test_an_existing_report_folder_is_replaced_whole(tmp_path: Path, bundles: dict[str, Path]):
    folder = copy_of(bundles["two"], tmp_path / "bundle")  # the bundle of a run of two policies
    first = snapshot(folder)
    (folder / "report.md").write_text("edited", encoding="utf-8")  # ours, edited: replaced like the rest
    res = invoke("compare", bundles["trace"], "--policies", "none", "-o", folder)  # a run of one
    assert res.exit_code == 0, res.stderr
    second, fresh = snapshot(folder), snapshot(bundles["one"])
    assert second.keys() == fresh.keys()
    for name, data in fresh.items():
        if not name.endswith(".parquet"):  # Parquet embeds writer metadata
            assert second[name] == data, f"{name} is not from the new run"
    assert second["run.json"] != first["run.json"] and b'"clear' not in second["run.json"]
    assert hidden_siblings(folder) == []


def test_report_rewrites_a_bundle_from_its_own_run_json(tmp_path: Path, bundles: dict[str, Path]):
    folder = copy_of(bundles["two"], tmp_path / "bundle")
    before = snapshot(folder)
    res = invoke("report", folder / "run.json", "-o", folder)
    assert res.exit_code == 0, res.stderr
    after = snapshot(folder)
    assert after.keys() == before.keys() and after["run.json"] == before["run.json"]


def test_a_folder_with_files_not_ours_is_not_deleted_without_force(tmp_path: Path, run_json: Path,
                                                                     bundles: dict[str, Path]):
    folder = copy_of(bundles["two"], tmp_path / "bundle")
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    before = snapshot(folder)
    one_error_line(invoke("report", run_json, "-o", folder), "notes.txt", "--force")
    assert snapshot(folder) == before
    res = invoke("report", run_json, "-o", folder, "--force")
    assert res.exit_code == 0, res.stderr
    assert "notes.txt" not in snapshot(folder)  # --force: the folder replaced whole, as the refusal said


def test_an_input_inside_the_bundle_folder_is_refused(tmp_path: Path):
    folder = tmp_path / "work"
    folder.mkdir()
    inner = folder / "run.json"  # a trace saved under a bundle's name
    inner.write_bytes(NATIVE.read_bytes())
    one_error_line(invoke("compare", inner, "--policies", "clear", "-o", folder), "holds the input")
    assert inner.read_bytes() == NATIVE.read_bytes()


def test_the_current_folder_is_never_replaced(tmp_path: Path, trace: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    for extra in ((), ("--force",)):
        one_error_line(invoke("compare", trace, "--policies", "clear", "-o", ".", *extra), "current folder")
        one_error_line(invoke("compare", trace, "--policies", "clear", "-o", tmp_path.parent, *extra),
                       "current folder")
    assert trace.read_bytes() == NATIVE.read_bytes()


def test_a_bundle_folder_symlink_is_refused(tmp_path: Path, run_json: Path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "bundle"
    link.symlink_to(real)
    one_error_line(invoke("report", run_json, "-o", link), "symbolic link")
    assert link.is_symlink() and list(real.iterdir()) == []
    res = invoke("report", run_json, "-o", link, "--force")
    assert res.exit_code == 0, res.stderr
    assert link.is_symlink() and (real / "run.json").read_bytes() == run_json.read_bytes()


def test_the_two_rename_swap_puts_the_old_folder_back_when_interrupted(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch):
    """Where renameat2 cannot swap, the old folder is renamed aside and the new one in; an interruption
    between the two renames puts the old one back."""
    import ctxsim._support.fileio as fileio

    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "a").write_text("old", encoding="utf-8")
    monkeypatch.setattr(fileio, "_exchange", lambda a, b: False)
    real_rename = os.rename

    def rename(src, dst):  # type: ignore[no-untyped-def]
        if Path(dst) == folder and ".tmp-" in str(src):  # the new folder going in
            raise KeyboardInterrupt
        real_rename(src, dst)

    monkeypatch.setattr(fileio.os, "rename", rename)

    def fill(into: Path) -> None:
        (into / "a").write_text("new", encoding="utf-8")

    with pytest.raises(KeyboardInterrupt):
        replace_folder(folder, fill)
    assert (folder / "a").read_text(encoding="utf-8") == "old" and hidden_siblings(folder) == []
    monkeypatch.setattr(fileio.os, "rename", real_rename)
    replace_folder(folder, fill)  # the fallback itself works
    assert (folder / "a").read_text(encoding="utf-8") == "new" and hidden_siblings(folder) == []


def test_pending_names_the_outputs_not_written_yet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from ctxsim._support.fileio import atomic_write, check_folder, check_output, pending, reset_pending

    monkeypatch.chdir(tmp_path)
    reset_pending()
    check_output("a.json")
    check_folder("b/")
    assert pending() == ["a.json", "b/"]  # as the user wrote them
    with atomic_write(tmp_path / "a.json") as out:
        out.write("{}")
    assert pending() == ["b/"]  # the same file, however it is spelled
    replace_folder(Path("b"), lambda into: None)
    assert pending() == []


# ---------------------------------------------------------------- interrupted for real (subprocesses)
PAUSING_CHILD = textwrap.dedent("""
    import os, sys, time
    import ctxsim.reports as reports

    real = reports.write_file
    count = 0

    def pausing(path, content, force=False):  # the bundle's files, one by one
        global count
        out = real(path, content, force)
        count += 1
        if count == int(os.environ["PAUSE_AFTER"]):
            print("paused", flush=True)
            time.sleep(600)
        return out

    reports.write_file = pausing
    sys.argv = ["ctxsim", *sys.argv[1:]]
    from ctxsim.cli import main

    main()
""")


def _pausing(args: list[object], pause_after: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PAUSE_AFTER": str(pause_after)}
    proc = subprocess.Popen([sys.executable, "-c", PAUSING_CHILD, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "paused"  # mid-bundle: some of its files written
    return proc


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


@pytest.mark.parametrize(("sig", "code", "name"), [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_interrupted_mid_bundle_keeps_the_old_run_whole(tmp_path: Path, bundles: dict[str, Path], sig, code, name):
    folder = copy_of(bundles["two"], tmp_path / "bundle")
    old = snapshot(folder)
    proc = _pausing(["report", bundles["one.json"], "-o", folder], pause_after=5)  # a different run
    assert snapshot(folder) == old and len(hidden_siblings(folder)) == 1  # the new one is being filled aside
    os.kill(proc.pid, sig)
    returncode, err = _finish(proc)
    assert returncode == code, err
    assert err.strip().splitlines() == [f"ctxsim: interrupted ({name}); did not write {folder} (left as it was)"]
    assert snapshot(folder) == old  # the old run, whole
    assert hidden_siblings(folder) == []  # no temporary folder left


def test_interrupted_first_bundle_leaves_no_folder(tmp_path: Path, run_json: Path):
    folder = tmp_path / "bundle"
    proc = _pausing(["report", run_json, "-o", folder], pause_after=3)
    os.kill(proc.pid, signal.SIGINT)
    returncode, err = _finish(proc)
    assert returncode == 130 and "did not write" in err
    assert not folder.exists() and hidden_siblings(folder) == []


def test_killed_mid_bundle_the_leftover_is_removed_by_the_next_run(tmp_path: Path, bundles: dict[str, Path]):
    folder = copy_of(bundles["two"], tmp_path / "bundle")
    old = snapshot(folder)
    run_json = bundles["one.json"]
    proc = _pausing(["report", run_json, "-o", folder], pause_after=4)
    os.kill(proc.pid, signal.SIGKILL)
    _finish(proc)
    assert snapshot(folder) == old
    left = hidden_siblings(folder)
    assert len(left) == 1 and left[0].startswith(f".bundle.tmp-{proc.pid}-")  # SIGKILL: nothing can clean up
    assert invoke("report", run_json, "-o", folder).exit_code == 0  # the next writer of the folder does
    assert hidden_siblings(folder) == [] and snapshot(folder)["run.json"] == run_json.read_bytes()


WORKER_CHILD = textwrap.dedent("""
    import os, sys, time
    import ctxsim.replay.choices as api

    parent = os.getpid()
    real = api.run_ordered

    mark = os.environ["WORKER_MARK"]

    def run_ordered(task, count, jobs, done=None, first=None):
        def slow(i):
            if os.getpid() != parent:  # in a worker: say so, then take long
                open(mark, "w").close()
                print(f"worker {os.getpid()}", flush=True)
                time.sleep(600)
            for _ in range(1200):  # here: leave the other task to the worker (else this process may take both)
                if os.path.exists(mark):
                    break
                time.sleep(0.1)
            return task(i)
        return real(slow, count, jobs, done, first)

    api.run_ordered = run_ordered
    sys.argv = ["ctxsim", *sys.argv[1:]]
    from ctxsim.cli import main

    main()
""")


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # a zombie is dead, waiting for a parent (possibly a non-reaping init) to reap it


def _wait_gone(pid: int) -> bool:
    import time

    for _ in range(600):  # a bounded wait for an end state, not a timing assertion
        if _gone(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the workers are forked on Linux only")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_an_interrupted_or_killed_compare_leaves_no_worker_and_no_temporary_file(tmp_path: Path, trace: Path, sig):
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "WORKER_MARK": str(tmp_path / "worker-started")}
    out = tmp_path / "out.json"
    proc = subprocess.Popen([sys.executable, "-c", WORKER_CHILD, "compare", str(trace), "--policies", "clear",
                             "-j", "2", "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    worker = 0
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("worker "), line
        worker = int(line.split()[1])
        os.kill(proc.pid, sig)
        proc.wait(timeout=120)  # not communicate(): an orphaned worker would hold the pipes open
        gone = _wait_gone(worker)
        if sig == signal.SIGINT:
            err = proc.stderr.read()
            assert proc.returncode == 130, err
            assert err.strip().splitlines() == [f"ctxsim: interrupted (SIGINT); did not write {out} (left as it was)"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if worker and not _gone(worker):
            os.kill(worker, signal.SIGKILL)  # do not leave it to sleep on
        proc.stdout.close()
        proc.stderr.close()
    assert gone, "the worker outlived its parent"
    assert list(temp.iterdir()) == [] and not out.exists()


# ---------------------------------------------------------------- the last resort
def _boom(*args: object, **kwargs: object) -> None:
    raise RuntimeError("sk-ant-api03-SECRET-trace-content")  # a message that may hold trace content


def test_an_unexpected_exception_is_one_line_naming_the_input(trace: Path, monkeypatch: pytest.MonkeyPatch):
    import ctxsim.replay.api

    monkeypatch.setattr(ctxsim.replay.api, "replay_trace", _boom)
    line = one_error_line(invoke("replay", trace), "internal error in ctxsim replay", str(trace), "RuntimeError",
                          "bug", "--debug", "CTXSIM_DEBUG=1")
    assert "SECRET" not in line  # the type and the place, never the message
    assert "at ctxsim/commands/replay.py:" in line  # where, in ctxsim, it was raised


def test_debug_shows_the_traceback(trace: Path, monkeypatch: pytest.MonkeyPatch):
    import ctxsim.replay.api

    monkeypatch.setattr(ctxsim.replay.api, "replay_trace", _boom)
    for res in (invoke("--debug", "replay", trace), invoke("replay", trace, env={"CTXSIM_DEBUG": "1"})):
        assert res.exit_code == 2
        assert "Traceback (most recent call last)" in res.stderr and "RuntimeError" in res.stderr
        assert res.stderr.strip().splitlines()[-1].startswith("ctxsim: error: internal error")


def test_an_eof_error_is_not_abort_exit_1(trace: Path, monkeypatch: pytest.MonkeyPatch):
    """click turns an EOFError into `Aborted!` and exit 1 (a broken gzip did that); the guard comes first."""
    import ctxsim.replay.api

    def eof(*args: object, **kwargs: object) -> None:
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")

    monkeypatch.setattr(ctxsim.replay.api, "replay_trace", eof)
    one_error_line(invoke("replay", trace), "EOFError")


def test_main_catches_what_escapes_every_command():
    child = "import ctxsim.cli as cli\ndef boom(args):\n    raise ZeroDivisionError\ncli._run_app = boom\ncli.main()\n"
    done = subprocess.run([sys.executable, "-c", child, "replay"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctxsim: error: internal error in ctxsim replay: "
                                                   "ZeroDivisionError"), done.stderr
