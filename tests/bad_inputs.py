"""A bad-input corpus for every reader and every command that reads input, written by code.

Nothing large is committed: each case writes its files into a folder when it runs (the
bases are the tiny session of tests/fixtures/tiny, one file per format). A case says what
the command line must do with it: exit 2 with one line on stderr that names the input, or
exit 0 where the input is valid (a BOM, CRLF, a reused tool call id, a trace with no model
request ...). tests/test_bad_inputs.py runs every case; this script prints the table:

    python tests/bad_inputs.py --table          # case -> exit code -> message
    python tests/bad_inputs.py --table CASE...  # only the cases whose name contains CASE
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TINY = Path(__file__).resolve().parent / "fixtures" / "tiny"
FILES = {
    "native": "native.jsonl",
    "claude-code": "claude-code.jsonl",
    "codex": "codex.jsonl",
    "openai-chat": "openai-chat.json",
    "anthropic-messages": "anthropic-messages.jsonl",
    "swe-agent": "swe-agent.traj",
    "mini-swe-agent": "mini-swe-agent.traj.json",
    "openhands": "openhands.json",
}
JSONL = {"native", "claude-code", "codex", "anthropic-messages"}
# Where each format keeps its timestamps (swe-agent logs none).
TS_KEY = {"native": "ts", "claude-code": "timestamp", "codex": "timestamp", "openai-chat": "ts",
          "anthropic-messages": "ts", "mini-swe-agent": "timestamp", "openhands": "timestamp"}
PROMPT = "Fix the rounding bug in invoice.py"
EMPTY_ID_REFUSED = {"native", "codex", "swe-agent"}


@dataclass
class Setup:
    """What a case writes: files in the folder, the command line, stdin."""

    argv: list[str]
    names: str  # what the one-line message must name (a path as given, or '-')
    stdin: bytes | None = None


@dataclass(frozen=True)
class Case:
    name: str
    expect: int  # 2: refused with one line; 0: valid
    make: Callable[[Path], Setup] = field(repr=False)


# ---------------------------------------------------------------- bases and mutations


def base_text(fmt: str) -> str:
    return (TINY / FILES[fmt]).read_text(encoding="utf-8")


def base_records(fmt: str) -> list[dict]:
    return [json.loads(line) for line in base_text(fmt).splitlines() if line.strip()]


def dump(fmt: str, value: object) -> str:
    """Records (JSONL formats) or a document back to text."""
    if fmt in JSONL:
        return "".join(json.dumps(r) + "\n" for r in value)  # type: ignore[attr-defined]
    return json.dumps(value, indent=1) + "\n"


def parsed(fmt: str) -> object:
    return base_records(fmt) if fmt in JSONL else json.loads(base_text(fmt))


def set_key(value: object, key: str, new: object) -> object:
    """Every `key` in every object of `value` set to `new` (in place)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for k in list(item):
                if k == key:
                    item[k] = new
                else:
                    stack.append(item[k])
        elif isinstance(item, list):
            stack.extend(item)
    return value


def inject(text: str, fragment: str) -> str:
    """`fragment` (a `"key": value` pair) inserted as the first member of the first object of
    the text: an unknown field a reader must survive (or refuse cleanly)."""
    i = text.find("{")
    return text[: i + 1] + fragment + ", " + text[i + 1:]


def truncated(data: bytes) -> bytes:
    """Cut inside a JSON value (not at a line end, where the rest would still be whole lines)."""
    cut = len(data) * 3 // 5
    while data[cut - 1:cut] in (b"\n", b"}", b"]", b" "):
        cut -= 1
    return data[:cut]


def with_ts(fmt: str, value: object) -> bytes:
    return dump(fmt, set_key(parsed(fmt), TS_KEY[fmt], value)).encode()


def gzipped_padded(text: str, fmt: str) -> bytes:
    """The file gzipped, grown past 64 KiB of compressed data by an unknown field of random hex."""
    pad = os.urandom(60_000).hex()
    return gzip.compress(inject(text, f'"padding": "{pad}"').encode(), mtime=0)


def mutations(fmt: str) -> dict[str, tuple[int, Callable[[], bytes], list[str]]]:
    """name -> (expected exit, content, extra options) for one format."""
    text = base_text(fmt)
    native = fmt == "native"
    deep = 100_000
    out: dict[str, tuple[int, Callable[[], bytes], list[str]]] = {
        "valid": (0, lambda: text.encode(), []),
        "bom": (0, lambda: b"\xef\xbb\xbf" + text.encode(), []),
        "crlf": (0, lambda: text.replace("\n", "\r\n").encode(), []),
        "gzip": (0, lambda: gzip.compress(text.encode(), mtime=0), []),
        "bom-gzip": (0, lambda: gzip.compress(b"\xef\xbb\xbf" + text.encode(), mtime=0), []),
        "truncated": (2, lambda: truncated(text.encode()), []),
        "invalid-utf8": (2, lambda: text.encode().replace(b"rounding", b"round\xffing"), []),
        # a lone surrogate: repaired (U+FFFD, counted in the notes) by foreign readers, refused by native
        "lone-surrogate": (2 if native else 0, lambda: text.replace("rounding", "round\\ud800ing").encode(), []),
        "surrogate-pair": (0, lambda: text.replace("rounding", "round\\ud83d\\ude00ing").encode(), []),
        "nesting-100k": (2, lambda: inject(text, '"deep": ' + "[" * deep + "]" * deep).encode(), []),
        "int-5000-digits": (2, lambda: inject(text, '"big": ' + "9" * 5000).encode(), []),
        "nan-unknown-field": (0, lambda: inject(text, '"x": NaN').encode(), []),
        "broken-gzip-past-64k": (2, lambda: gzipped_padded(text, fmt)[:-4000], []),
        "gzip-crc": (2, lambda: gzipped_padded(text, fmt)[:-8] + b"\0" * 8, []),
        "over-max-input-bytes": (2, lambda: text.encode(), ["--max-input-bytes", "100"]),
        "gzip-over-max-input-bytes": (2, lambda: gzipped_padded(text, fmt), ["--max-input-bytes", "64K"]),
        "over-max-messages": (2, lambda: text.encode(), ["--max-messages", "1"]),
        # an empty tool call id: given one ('call') by the readers that build sessions liberally; refused,
        # naming the line, by the native format and by the readers that need an id to pair a result
        "empty-tool-call-id": (2 if fmt in EMPTY_ID_REFUSED else 0,
                               lambda: text.replace('"call_1"', '""').encode(), []),
    }
    if fmt in JSONL:
        out["over-max-line-bytes"] = (2, lambda: text.encode(), ["--max-line-bytes", "200"])
        out["array-line"] = (2, lambda: (text + "[1, 2]\n").encode(), [])
        out["garbage-line"] = (2, lambda: (text + "\x00\x01 not json\n").encode(), [])
        out["garbage-line-skipped"] = (0, lambda: (text + "\x00\x01 not json\n").encode(), ["--skip-bad-lines"])
    else:
        out["top-level-string"] = (2, lambda: b'"just a string"\n', [])
        out["top-level-number"] = (2, lambda: b"12\n", [])
    if fmt in TS_KEY:
        out["ts-nan"] = (2, lambda: with_ts(fmt, float("nan")), [])
        out["ts-infinity"] = (2, lambda: with_ts(fmt, float("inf")), [])
        out["ts-1e300"] = (2, lambda: with_ts(fmt, 1e300), [])
        out["ts-1e20"] = (2, lambda: with_ts(fmt, 1e20), [])
        out["ts-bool"] = (2, lambda: with_ts(fmt, True), [])
        out["ts-year-10000-utc"] = (2, lambda: with_ts(fmt, "9999-12-31T23:59:59-01:00"), [])
        out["ts-year-0-utc"] = (2, lambda: with_ts(fmt, "0001-01-01T00:00:00+01:00"), [])
        out["ts-not-a-date"] = (2, lambda: with_ts(fmt, "yesterday"), [])
        out["ts-year-9999-utc"] = (0, lambda: with_ts(fmt, "9999-12-31T23:59:59Z"), [])
    return out


NATIVE_HEADER = {"type": "session", "version": 1, "id": "s", "model": "claude-sonnet-4-5", "provider": "anthropic"}
USER = {"type": "message", "role": "user", "content": "hi"}
REPLY = {"type": "message", "role": "assistant", "content": "ok",
         "usage": {"input_tokens": 10, "cache_read_tokens": 0, "cache_write_tokens": 0, "output_tokens": 2}}


def native_text(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def call(cid: str) -> dict:
    return {"type": "message", "role": "assistant", "content": "",
            "tool_calls": [{"id": cid, "name": "read_file", "arguments": {"path": "a"}}],
            "usage": {"input_tokens": 10, "output_tokens": 2}}


def result(cid: str) -> dict:
    return {"type": "message", "role": "tool", "tool_call_id": cid, "name": "read_file", "content": "x"}


NATIVE_CASES: dict[str, tuple[int, bytes]] = {
    "no-content": (2, native_text(NATIVE_HEADER, {"type": "message", "role": "user"}, REPLY)),
    "content-null": (2, native_text(NATIVE_HEADER, {**USER, "content": None}, REPLY)),
    "content-array": (2, native_text(NATIVE_HEADER, {**USER, "content": [{"type": "text", "text": "hi"}]}, REPLY)),
    "no-model-request": (0, native_text(NATIVE_HEADER, USER)),
    "empty-assistant-only": (0, native_text({"type": "message", "role": "assistant", "content": ""})),
    "call-id-reused-after-answer": (0, native_text(NATIVE_HEADER, USER, call("c1"), result("c1"), call("c1"),
                                                   result("c1"), REPLY)),
    "call-id-reused-while-open": (2, native_text(NATIVE_HEADER, USER, call("c1"), call("c1"), result("c1"))),
    "second-result": (2, native_text(NATIVE_HEADER, USER, call("c1"), result("c1"), result("c1"))),
    "result-without-call": (2, native_text(NATIVE_HEADER, USER, result("c9"))),
    "unknown-role": (2, native_text(NATIVE_HEADER, {**USER, "role": "robot"})),
    "unknown-type": (2, native_text(NATIVE_HEADER, {"type": "thing"})),
    "no-type": (2, native_text(NATIVE_HEADER, {"role": "user", "content": "x"})),
    "version-2": (2, native_text({**NATIVE_HEADER, "version": 2}, USER)),
    "usage-cache-over-input": (2, native_text(NATIVE_HEADER, USER, {**REPLY, "usage": {
        "input_tokens": 10, "cache_read_tokens": 20}})),
    "usage-negative": (2, native_text(NATIVE_HEADER, USER, {**REPLY, "usage": {"input_tokens": -1}})),
    "usage-absurd": (2, native_text(NATIVE_HEADER, USER, {**REPLY, "usage": {"input_tokens": 10 ** 12}})),
    "usage-float": (2, native_text(NATIVE_HEADER, USER, {**REPLY, "usage": {"input_tokens": 1.5}})),
    "usage-nan": (2, b'{"type": "message", "role": "assistant", "content": "", "usage": {"input_tokens": NaN}}\n'),
    "window-zero": (2, native_text({**NATIVE_HEADER, "window": 0}, USER)),
    "ts-number": (2, native_text(NATIVE_HEADER, {**USER, "ts": 1768323361})),
    "tool-calls-on-user": (2, native_text(NATIVE_HEADER, {**USER, "tool_calls": [{"id": "a", "name": "b"}]})),
    "only-blank-lines": (2, b"\n\n   \n\t\n"),
    "bom-only": (2, b"\xef\xbb\xbf"),
    "bom-then-blank-lines": (2, b"\xef\xbb\xbf\n\n"),
    "nul-bytes": (2, b"\x00" * 5000),
    "binary-garbage": (2, bytes(range(256)) * 40),
}


# ---------------------------------------------------------------- building cases


def _file(name: str, content: bytes | Callable[[], bytes], argv: Callable[[str], list[str]],
          stdin: bool = False) -> Callable[[Path], Setup]:
    def make(folder: Path) -> Setup:
        path = folder / name
        data = content() if callable(content) else content
        if stdin:
            return Setup(argv("-"), "-", data)
        path.write_bytes(data)
        return Setup(argv(str(path)), str(path))

    return make


def reader_cases() -> list[Case]:
    out = []
    for fmt, filename in FILES.items():
        for mutation, (expect, content, options) in mutations(fmt).items():
            name = filename + (".gz" if "gzip" in mutation else "")

            def argv(path: str, fmt: str = fmt, options: list[str] = options, mutation: str = mutation) -> list[str]:
                forced = [] if mutation in ("valid", "bom", "crlf", "gzip", "bom-gzip") else ["--format", fmt]
                return ["inspect", path, *forced, *options]

            out.append(Case(f"{fmt}/{mutation}", expect, _file(name, content, argv)))
        # the same valid file, its format detected from a BOM-prefixed head on stdin
        out.append(Case(f"{fmt}/bom-stdin", 0, _file(filename, lambda fmt=fmt: b"\xef\xbb\xbf" + base_text(
            fmt).encode(), lambda p: ["inspect", p], stdin=True)))
    for mutation, (expect, content) in NATIVE_CASES.items():
        out.append(Case(f"native/{mutation}", expect, _file(f"{mutation}.jsonl", content, lambda p: ["inspect", p])))
    return out


def _fifo(folder: Path) -> str:
    path = folder / "fifo.jsonl"
    os.mkfifo(path)
    return str(path)


def _socket(folder: Path) -> str:
    path = folder / "sock.jsonl"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
    return str(path)


def _sparse(folder: Path) -> str:
    path = folder / "sparse.jsonl"
    with open(path, "wb") as f:
        f.truncate(2 * 10 ** 9)  # 2 GB of holes: refused by its size, never read
    return str(path)


def _dir_without_traces(folder: Path) -> str:
    (folder / "notes").mkdir()
    (folder / "notes" / "readme.txt").write_text("not a trace\n")
    return str(folder / "notes")


def _dir_with_fifo(folder: Path) -> str:
    (folder / "d").mkdir()
    os.mkfifo(folder / "d" / "pipe.jsonl")
    return str(folder / "d")


def _text(name: str, data: bytes) -> Callable[[Path], str]:
    def make(folder: Path) -> str:
        (folder / name).write_bytes(data)
        return str(folder / name)

    return make


def _text_in_dir(name: str, data: bytes) -> Callable[[Path], str]:
    def make(folder: Path) -> str:
        (folder / "traces").mkdir()
        (folder / "traces" / name).write_bytes(data)
        return str(folder / "traces")

    return make


BAD_INPUTS: dict[str, tuple[int, Callable[[Path], str]]] = {
    "missing-file": (2, lambda folder: str(folder / "nope.jsonl")),
    "path-under-a-file": (2, lambda folder: _text("f.jsonl", b"x")(folder) + "/inner.jsonl"),
    "fifo": (2, _fifo),
    "socket": (2, _socket),
    "char-device": (2, lambda folder: "/dev/null"),
    "sparse-2gb": (2, _sparse),
    "empty-file": (2, _text("empty.jsonl", b"")),
    "dir-without-traces": (2, _dir_without_traces),
    "dir-with-only-a-fifo": (2, _dir_with_fifo),
    "truncated-native": (2, _text("t.jsonl", native_text(NATIVE_HEADER, USER)[:-20])),
    "truncated-native-in-dir": (2, _text_in_dir("t.jsonl", native_text(NATIVE_HEADER, USER, REPLY)[:-20])),
    "nan-timestamp": (2, lambda folder: _text("c.jsonl", with_ts("claude-code", float("nan")))(folder)),
    "year-10000-timestamp": (2, _text("y.jsonl", native_text(NATIVE_HEADER, {
        **USER, "ts": "9999-12-31T23:59:59-01:00"}, REPLY))),
    "lone-surrogate-native": (2, _text("s.jsonl", native_text(NATIVE_HEADER, USER, REPLY).replace(
        b'"hi"', b'"\\ud800"'))),
    "lone-surrogate-claude-code": (0, lambda folder: _text("s.jsonl", base_text("claude-code").replace(
        "rounding", "\\udc80").encode())(folder)),
    "broken-gzip-past-64k": (2, lambda folder: _text("g.jsonl.gz", gzipped_padded(base_text("native"), "native")[
        :-4000])(folder)),
    "gzip-bomb": (2, _text("bomb.jsonl.gz", gzip.compress(b'{"type": "message", "role": "user", "content": "'
                                                          + b"a" * (3 << 20) + b'"}\n', mtime=0))),
    "no-content": (2, _text("n.jsonl", NATIVE_CASES["no-content"][1])),
    "no-model-request": (0, _text("q.jsonl", native_text(NATIVE_HEADER, USER))),
    "empty-tool-call-id-openai": (0, lambda folder: _text("e.json", base_text("openai-chat").replace(
        '"call_1"', '""').encode())(folder)),
}
COMMANDS: dict[str, Callable[[str, Path], list[str]]] = {
    "replay": lambda p, folder: ["replay", p],
    "compare": lambda p, folder: ["compare", p, "--policies", "clear"],
    "inspect": lambda p, folder: ["inspect", p],
    "convert": lambda p, folder: ["convert", p, "-o", str(folder / "out.jsonl")],
    "validate": lambda p, folder: ["validate", p],
}
BOMB_LIMIT = ["--max-input-bytes", "1M"]  # the gzip bomb: 3 MiB of data in 3 KiB


def command_cases() -> list[Case]:
    out = []
    for bad, (expect, make_input) in BAD_INPUTS.items():
        for command, argv in COMMANDS.items():
            def make(folder: Path, make_input: Callable[[Path], str] = make_input, argv=argv, bad: str = bad,
                     command: str = command) -> Setup:
                path = make_input(folder)
                setup = Setup(argv(path, folder) + (BOMB_LIMIT if bad == "gzip-bomb" else []), path)
                if command == "validate" and bad == "no-model-request":
                    setup.names = "q"  # validate names the trace (its stem), not the file, when none recorded usage
                return setup

            code = 2 if command == "validate" and bad == "no-model-request" else expect
            out.append(Case(f"{command}/{bad}", code, make))
    # stdin: `-` is allowed, within the same limits
    bomb = BAD_INPUTS["gzip-bomb"][1]
    out.append(Case("inspect/stdin-gzip-bomb", 2, lambda folder: Setup(
        ["inspect", "-", *BOMB_LIMIT], "-", Path(bomb(folder)).read_bytes())))
    out.append(Case("inspect/stdin-over-max-input-bytes", 2, lambda folder: Setup(
        ["inspect", "-", "--max-input-bytes", "100"], "-", base_text("native").encode())))
    out.append(Case("inspect/stdin-broken-gzip", 2, lambda folder: Setup(
        ["inspect", "-"], "-", gzip.compress(base_text("native").encode(), mtime=0)[:-10])))
    out.append(Case("replay/stdin-valid", 0, lambda folder: Setup(["replay", "-"], "-", base_text("native").encode())))
    # compare's report bundle on a trace with no model request (the composition chart crashed)
    out.append(Case("compare-bundle/no-model-request", 0, lambda folder: Setup(
        ["compare", _text("q.jsonl", native_text(NATIVE_HEADER, USER))(folder), "--policies", "clear",
         "-o", str(folder / "bundle")], str(folder / "q.jsonl"))))
    # the same chart drawn alone for a run whose one request had an empty prompt (every series zero)
    def empty_chart(folder: Path) -> Setup:
        trace = _text("e.jsonl", NATIVE_CASES["empty-assistant-only"][1])(folder)
        code, _, err = _run(["replay", trace, "-o", str(folder / "run.json")])
        assert code == 0, err
        return Setup(["report", str(folder / "run.json"), "-f", "png", "--chart", "composition", "-o",
                      str(folder / "c.png")], str(folder / "run.json"))

    out.append(Case("report-chart/composition-of-an-empty-prompt", 0, empty_chart))
    # what convert writes reads back, from ids the native format would refuse
    for fmt in sorted(set(FILES) - EMPTY_ID_REFUSED):
        def converted(folder: Path, fmt: str = fmt) -> Setup:
            from ctxsim.formats import read_trace

            source = folder / ("in-" + FILES[fmt])
            source.write_text(base_text(fmt).replace('"call_1"', '""'), encoding="utf-8")
            out_path = folder / "out.jsonl"
            _run(["convert", str(source), "-o", str(out_path)])
            read_trace(str(out_path), "native")  # raises if convert wrote what it cannot read
            return Setup(["replay", str(out_path)], str(out_path))

        out.append(Case(f"convert-then-replay/{fmt}-empty-tool-call-id", 0, converted))
    for option, value in (("--max-line-bytes", "zero"), ("--max-input-bytes", "-5"), ("--max-messages", "0")):
        out.append(Case(f"inspect/option{option}={value}", 2, lambda folder, option=option, value=value: Setup(
            ["inspect", _text("ok.jsonl", base_text("native").encode())(folder), option, value], option)))
    return out


# run artefacts: `report` and `diff` read run.json
def _run_json(folder: Path) -> str:
    path = folder / "run.json"
    if not path.exists():
        trace = _text("ok.jsonl", base_text("native").encode())(folder)
        code, _, err = _run(["replay", trace, "-o", str(path)])
        assert code == 0, err
    return str(path)


RUN_ARTEFACTS: dict[str, Callable[[Path], str]] = {
    "missing": lambda folder: str(folder / "nope.json"),
    "empty": _text("empty.json", b""),
    "not-json": _text("x.json", b"hello"),
    "not-utf8": _text("x.json", b'{"manifest": "\xff\xfe"}'),
    "array": _text("x.json", b"[]"),
    "empty-object": _text("x.json", b"{}"),
    "truncated": lambda folder: _text("t.json", Path(_run_json(folder)).read_bytes()[:200])(folder),
    "folder": lambda folder: str(folder),
    "fifo": _fifo,
    "runs-not-a-list": _text("x.json", b'{"manifest": {}, "runs": 3}'),
    "lone-surrogate": _text("x.json", b'{"manifest": {"trace": "\\ud800"}, "runs": []}'),
}


def _report(make_input: Callable[[Path], str]) -> Callable[[Path], Setup]:
    def make(folder: Path) -> Setup:
        path = make_input(folder)
        return Setup(["report", path], path)

    return make


def _diff(make_input: Callable[[Path], str]) -> Callable[[Path], Setup]:
    def make(folder: Path) -> Setup:
        path = make_input(folder)
        return Setup(["diff", path, _run_json(folder)], path)

    return make


def artefact_cases() -> list[Case]:
    out = []
    for bad, make_input in RUN_ARTEFACTS.items():
        out.append(Case(f"report/{bad}", 2, _report(make_input)))
        out.append(Case(f"diff/{bad}", 2, _diff(make_input)))
    out.append(Case("report/valid", 0, _report(_run_json)))
    return out


POLICY_FILES: dict[str, tuple[int, str, bytes]] = {
    "toml-not-utf8": (2, "p.toml", b'[policies.a]\npolicy = "clear"\n# caf\xe9\n'),
    "toml-bom": (0, "p.toml", b'\xef\xbb\xbf[policies.a]\npolicy = "clear"\n'),
    "toml-broken": (2, "p.toml", b"[policies.a\npolicy = \n"),
    "toml-empty": (2, "p.toml", b""),
    "toml-policy-is-a-list": (2, "p.toml", b'[policies.a]\npolicy = ["clear"]\n'),
    "toml-preset-is-a-table": (2, "p.toml", b"[policies.a]\npreset = {x = 1}\n"),
    "toml-stage-policy-number": (2, "p.toml", b"[policies.a]\nstages = [{policy = 3}]\n"),
    "toml-unknown-policy": (2, "p.toml", b'[policies.a]\npolicy = "nope"\n'),
    "toml-bad-parameter": (2, "p.toml", b'[policies.a]\npolicy = "clear"\ntrigger = "soon"\n'),
    "toml-policies-not-a-table": (2, "p.toml", b'policies = 3\n'),
    "toml-nul-bytes": (2, "p.toml", b"\x00" * 100),
    "json-not-utf8": (2, "p.json", b'{"edits": [{"type": "\xff"}]}'),
    "json-broken": (2, "p.json", b'{"edits": ['),
    "json-edit-type-is-a-list": (2, "p.json", b'{"edits": [{"type": ["clear"]}]}'),
    "json-nesting-100k": (2, "p.json", b"[" * 100_000 + b"]" * 100_000),
}


def policy_cases() -> list[Case]:
    out = []
    for bad, (expect, name, data) in POLICY_FILES.items():
        def make(folder: Path, name: str = name, data: bytes = data) -> Setup:
            trace = _text("ok.jsonl", base_text("native").encode())(folder)
            path = _text(name, data)(folder)
            return Setup(["replay", trace, "--policy", path], path)

        out.append(Case(f"policy-file/{bad}", expect, make))
    def fifo_policy(folder: Path) -> Setup:
        path = folder / "p.toml"
        os.mkfifo(path)
        return Setup(["replay", _text("ok.jsonl", base_text("native").encode())(folder), "--policy", str(path)],
                     str(path))

    out.append(Case("policy-file/fifo", 2, fifo_policy))
    return out


def cases() -> list[Case]:
    return reader_cases() + command_cases() + artefact_cases() + policy_cases()


# ---------------------------------------------------------------- running


def _run(argv: list[str], stdin: bytes | None = None) -> tuple[int, str, str]:
    """The CLI in this process: exit code, stdout, stderr. An exception that escapes the
    command is re-raised: it is what the corpus exists to catch."""
    from typer.testing import CliRunner

    from ctxsim.cli import app

    res = CliRunner().invoke(app, argv, input=stdin)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def run_case(case: Case, folder: Path) -> tuple[Setup, int, str]:
    setup = case.make(folder)
    code, _, err = _run(setup.argv, setup.stdin)
    return setup, code, err


def problems(case: Case, setup: Setup, code: int, err: str) -> list[str]:
    """What is wrong with how the CLI handled a case ([] when it is right)."""
    out = []
    if code != case.expect:
        out.append(f"exit {code}, expected {case.expect}")
    if "Traceback" in err or "--debug" in err:
        out.append("a traceback or an internal error")
    if case.expect == 2:
        lines = err.strip().splitlines()
        if len(lines) != 1:
            out.append(f"{len(lines)} lines on stderr, expected one")
        elif setup.names not in lines[0]:
            out.append(f"the message does not name {setup.names}")
    return out


def main(argv: list[str]) -> int:
    import tempfile

    if not argv or argv[0] != "--table":
        print(__doc__)
        return 2
    wanted = argv[1:]
    chosen = [c for c in cases() if not wanted or any(w in c.name for w in wanted)]
    width = max(len(c.name) for c in chosen)
    bad = 0
    print(f"{'case'.ljust(width)}  exit  message")
    for case in chosen:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            try:
                setup, code, err = run_case(case, folder)
                issues = problems(case, setup, code, err)
                message = err.strip().splitlines()[0] if err.strip() else ""
                message = message.replace(tmp, "$TMP")
            except Exception as exc:
                issues, code, message = [f"raised {type(exc).__name__}: {exc}"], -1, ""
        bad += bool(issues)
        mark = "" if not issues else "   <-- " + "; ".join(issues)
        print(f"{case.name.ljust(width)}  {code:>4}  {message[:160]}{mark}")
    print(f"\n{len(chosen)} cases, {bad} wrong")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main(sys.argv[1:]))
