"""The `coding` profile: a synthetic coding-agent session hunting a billing rounding bug.

One session: the user asks the agent to fix BRL invoice totals that drift by a cent; the
agent reads files, edits them, runs the tests (which fail with tracebacks until edits fix
the errors, and sometimes fail again after an edit regresses something), runs shell
commands, searches and keeps notes. Its messages carry the marker lines the system prompt
asks for (DECISION:, TODO:, DONE:, ERROR:, FILE:), so fact-retention checks have something
to look for. Timestamps advance by seconds, with occasional pauses of minutes and rare ones
of hours, long enough for a prompt cache to go cold.

Everything is drawn from `random.Random(seed)`; the text comes from `_coding_text`: the story's
fixed text and line pools built once at import from a fixed seed, so generation does no
per-character work. This module is the state machine that draws from them.

Calibration (output_scale 1.0, o200k_base, seeds 0-19): the first 60 turns append about
2.2k tokens a turn (exploration reads whole files; early test runs fail with long
tracebacks), so an unmanaged context holds 100-220k tokens by turn 60 (mean about 135k).
Later turns re-read ranges of files already seen and most test runs pass, so 600 turns
write about 2-2.4 MB in the native format and 2,400 turns about 6.4-7.4 MB.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from types import MappingProxyType
from typing import Any

from ctxsim.model import Message, Session, ToolCall, Trace, format_ts, parse_ts
from ctxsim.synth import option_number, option_weights
from ctxsim.synth._coding_text import (
    ALL_FILES,
    ASIDES,
    BASH_INTENTS,
    CURRENCIES,
    DECISIONS,
    EDIT_LINES,
    FAILURES,
    FIXES,
    FUNCS,
    LOG_LINES,
    PACKAGES,
    PLAN,
    PYPROJECT,
    REACTIONS,
    RESUMES,
    SEARCH_PATTERNS,
    SRC_BLOCKS,
    SRC_DOCS,
    SRC_FILES,
    SRC_HEADER,
    SRC_NAMES,
    SYSTEM,
    TASK,
    TEST_BLOCKS,
    TEST_FILES,
    TEST_HEADER,
    TODO_TEMPLATES,
    TOOLS,
    TOPICS,
    Failure,
)

PROFILE = "coding"
START = "2026-01-13T16:56:00Z"
MODEL = "claude-sonnet-4-5"
WINDOW = 200_000

TOOL_NAMES: tuple[str, ...] = (
    "read_file", "edit_file", "run_tests", "bash", "search", "notes_write", "notes_read",
)
DEFAULT_TOOL_MIX: dict[str, float] = {
    "read_file": 0.30, "run_tests": 0.20, "edit_file": 0.25, "bash": 0.15, "search": 0.07,
    "notes_write": 0.03,
}
DEFAULTS: dict[str, Any] = {
    "tool_mix": MappingProxyType(DEFAULT_TOOL_MIX),
    "output_scale": 1.0,  # multiplier on every tool output's size
    "aside_rate": 0.08,  # chance per turn (after the first) of a user aside
    "pause_rate": 0.03,  # chance per turn of a 6-50 minute pause before it
    "long_pause_rate": 0.005,  # chance per turn of a 1-3 hour pause before it
    "parallel_rate": 0.06,  # chance per turn of two parallel tool calls
}


def check(options: dict[str, Any]) -> dict[str, Any]:
    merged = {**DEFAULTS, **options}
    merged["tool_mix"] = option_weights(PROFILE, "tool_mix", merged["tool_mix"], TOOL_NAMES)
    merged["output_scale"] = option_number(PROFILE, "output_scale", merged["output_scale"],
                                           low=0.0, high=100.0, low_open=True)
    for rate in ("aside_rate", "pause_rate", "long_pause_rate", "parallel_rate"):
        merged[rate] = option_number(PROFILE, rate, merged[rate], high=1.0)
    return merged


def _lognormal(rng: random.Random, median: float, sigma: float, low: int, high: int) -> int:
    value = median * math.exp(rng.gauss(0.0, sigma))
    return max(low, min(high, int(value)))


def _rule(title: str, char: str = "=", width: int = 80) -> str:
    pad = max(2, width - len(title) - 2)
    return f"{char * (pad // 2)} {title} {char * (pad - pad // 2)}"


# ---------------------------------------------------------------- the generator


@dataclass
class _Call:
    name: str
    arguments: dict[str, Any]
    intent: str
    content: str = ""
    is_error: bool = False
    runtime: float = 0.5


@dataclass
class _State:
    rng: random.Random
    scale: float
    turn: int = 0
    clock: float = 0.0
    files: dict[str, list[str]] = field(default_factory=dict)
    reads: dict[str, int] = field(default_factory=dict)
    edits: list[tuple[str, int, str, str]] = field(default_factory=list)  # path, line, old, new
    active: list[int] = field(default_factory=lambda: [0, 1])  # indexes into FAILURES
    pending: list[str] = field(default_factory=list)  # marker lines for the next assistant message
    todos: list[str] = field(default_factory=list)
    decisions: int = 0
    notes: dict[str, list[str]] = field(default_factory=dict)
    last: tuple[str, bool] = ("", False)  # the previous turn's last tool and whether it failed

    # ---- helpers

    def size(self, median: float, sigma: float, low: int, high: int) -> int:
        s = self.scale
        return _lognormal(self.rng, median * s, sigma, max(1, int(low * s)), max(1, int(high * s)))

    def file(self, path: str) -> list[str]:
        lines = self.files.get(path)
        if lines is None:
            rng = self.rng
            is_test = path.startswith("tests/")
            pool = TEST_BLOCKS if is_test else SRC_BLOCKS
            target = self.size(430, 0.4, 100, 650)
            lines = [f'"""{path.rsplit("/", 1)[-1]}: {rng.choice(SRC_DOCS).lower()}"""', ""]
            lines += TEST_HEADER if is_test else SRC_HEADER
            for failure in FAILURES:  # tests that can fail live in their file
                if failure.test_file == path:
                    lines += TEST_BLOCKS[FAILURES.index(failure)]
            while len(lines) < target:
                lines += pool[rng.randrange(len(pool))]
            self.files[path] = lines
        return lines

    def pick_path(self, sources: Sequence[str]) -> str:
        unread = [p for p in sources if p not in self.reads]
        if unread and self.rng.random() < 0.8:
            return self.rng.choice(unread)
        return self.rng.choice(sources)

    def weighted_tool(self, mix: dict[str, float]) -> str:
        names = list(mix)
        return self.rng.choices(names, weights=[mix[n] for n in names])[0]

    # ---- tools

    def read_file(self) -> _Call:
        rng = self.rng
        focus = [FAILURES[i].test_file for i in self.active] + [f[0] for i in self.active for f in FAILURES[i].frames]
        path = rng.choice(focus) if focus and rng.random() < 0.3 else self.pick_path(
            SRC_FILES if rng.random() < 0.65 else (*TEST_FILES, "tests/conftest.py"))
        lines = self.file(path)
        seen = self.reads.get(path, 0)
        self.reads[path] = seen + 1
        args: dict[str, Any] = {"path": path}
        # Early re-reads are often whole files; later the agent knows where to look.
        if seen and rng.random() < 0.9 - 0.45 * math.exp(-self.turn / 80):
            limit = self.size(62, 0.6, 15, 250)
            offset = rng.randrange(max(1, len(lines) - limit // 2))
            args.update(offset=offset, limit=limit)
            part = lines[offset:offset + limit]
            intent = f"Looking at lines {offset}-{offset + len(part)} of {path} around {rng.choice(FUNCS)}()."
        else:
            part = lines
            intent = rng.choice((
                f"Let me read {path} to see how it handles {rng.choice(TOPICS)}.",
                f"Opening {path}; the {rng.choice(TOPICS)} logic should be in there.",
                f"I need the current version of {path} before changing anything.",
            ))
        if rng.random() < 0.15:
            self.pending.append(f"FILE: {path}, last read_file at turn {self.turn}")
        return _Call("read_file", args, intent, "\n".join(part), runtime=rng.uniform(0.05, 0.6))

    def edit_file(self) -> _Call:
        rng = self.rng
        focus = [f[0] for i in self.active for f in FAILURES[i].frames]
        known = [p for p in self.reads if p != "tests/conftest.py"]  # read before you edit
        if focus and rng.random() < 0.5:
            path = rng.choice(focus)
        elif known and rng.random() < 0.85:
            path = rng.choice(known)
        else:
            path = rng.choice(SRC_FILES if rng.random() < 0.75 else TEST_FILES)
        lines = self.file(path)
        index = rng.randrange(len(lines))
        while not lines[index].strip():
            index = (index + 1) % len(lines)
        old = lines[index]
        indent = old[: len(old) - len(old.lstrip())]
        new = indent + rng.choice((*EDIT_LINES, f"{old.strip()}  # keep: callers pass Decimal since the fix"))
        fix = rng.choice(FIXES)
        intent = rng.choice((f"Changing {rng.choice(FUNCS)} in {path} so that {fix}.", f"Editing {path}: {fix}."))
        args = {"path": path, "old_string": old.strip(), "new_string": new.strip()}
        if rng.random() < 0.05:
            return _Call("edit_file", args, intent,
                         f"Error: old_string not found in {path}; read the file again, it may have changed.",
                         is_error=True, runtime=0.1)
        lines[index] = new
        self.edits.append((path, index, old, new))
        start = max(0, index - 2)
        diff = [f"Edited {path}: 1 replacement at line {index + 1}.", f"@@ -{start + 1},5 +{start + 1},5 @@"]
        for j in range(start, min(len(lines), index + 3)):
            diff += [f"-{old}", f"+{new}"] if j == index else [f" {lines[j]}"]
        # The story: edits mostly fix what is failing and sometimes break something else.
        # Early on the agent is still hunting, so an edit fixes something less often.
        if self.active and rng.random() < 0.35 - 0.17 * math.exp(-self.turn / 200):
            self.active.pop(rng.randrange(len(self.active)))
        # Early edits break things often; later ones rarely, as the code settles.
        if rng.random() < 0.02 + 0.10 * math.exp(-self.turn / 250) and len(self.active) < 3:
            fresh = [i for i in range(len(FAILURES)) if i not in self.active]
            self.active.append(rng.choice(fresh))
        if rng.random() < 0.15:
            self.pending.append(f"FILE: {path}, last edit_file at turn {self.turn}")
        return _Call("edit_file", args, intent, "\n".join(diff), runtime=rng.uniform(0.05, 0.4))

    def run_tests(self) -> _Call:
        rng = self.rng
        roll = rng.random()
        if self.active and roll < 0.5:
            target = FAILURES[rng.choice(self.active)].test_file
        elif roll < 0.8:
            target = "tests/"
        else:
            target = rng.choice(TEST_FILES)
        args: dict[str, Any] = {"path": target}
        failing = [FAILURES[i] for i in self.active if target == "tests/" or FAILURES[i].test_file == target]
        if target != "tests/" and rng.random() < 0.35:
            failing = failing[:1]
            args["k"] = failing[0].test if failing else rng.choice(FUNCS)
        files = TEST_FILES if target == "tests/" else (target,)
        counts = {f: 8 + (sum(map(ord, f)) % 19) for f in files}
        header = f"collected {sum(counts.values())} items"
        if "k" in args:
            selected = max(1, len(failing[0].params)) if failing else rng.randint(1, 3)
            header += f" / {counts[target] - selected} deselected / {selected} selected"
            counts = {target: selected}
        total = sum(counts.values())
        out = [_rule("test session starts"), "platform linux -- Python 3.12.7, pytest-8.3.3, pluggy-1.5.0",
               "rootdir: /home/dev/billing", "configfile: pyproject.toml", "plugins: cov-5.0.0, anyio-4.6.2",
               header, ""]
        done = 0
        for f, n in counts.items():
            marks = ["."] * n
            for failure in failing:
                if failure.test_file == f:
                    first = sum(map(ord, failure.test)) % n
                    for j in range(max(1, len(failure.params))):
                        marks[(first + j) % n] = "F"
            done += n
            out.append(f"{f} {''.join(marks)}".ljust(74) + f"[{100 * done // total:3d}%]")
        out.append("")
        failed_ids: list[tuple[str, Failure]] = []
        for failure in failing:
            ids = [f"{failure.test}[{p}]" for p in failure.params] or [failure.test]
            failed_ids += [(test_id, failure) for test_id in ids]
        for number, (test_id, failure) in enumerate(failed_ids):
            out += [_rule("FAILURES") if number == 0 else "", _rule(test_id, "_"), ""]
            block = TEST_BLOCKS[FAILURES.index(failure)]
            body = [ln for ln in block if ln.strip()][:-1]
            out += ["    " + ln for ln in body]
            out.append(">   " + "    " + failure.check)
            path, lineno = failure.test_file, 40 + sum(map(ord, failure.test)) % 150
            for frame_path, frame_line, func, code in failure.frames:
                out += ["", f"{path}:{lineno}: ", "_ " * 39 + "_", ""]
                src = SRC_BLOCKS[(frame_line * 7 + len(frame_path)) % len(SRC_BLOCKS)]
                keep = self.size(20, 0.5, 4, 60)
                out += [f"    def {func}(*args, **kwargs):"] + ["    " + ln for ln in src[2:2 + keep] if ln]
                out.append(">   " + "    " + code.strip())
                path, lineno = frame_path, frame_line
            out += [f"E       {failure.line}"] + [f"E       {ln}" for ln in failure.explain] + [""]
            out.append(f"{path}:{lineno}: {failure.kind.rsplit('.', 1)[-1]}")
            if rng.random() < 0.8:
                out.append(_rule("Captured log call", "-"))
                out += [rng.choice(LOG_LINES) for _ in range(self.size(45, 0.8, 2, 300))]
        if failed_ids:
            out.append(_rule("short test summary info"))
            out += [f"FAILED {f.test_file}::{test_id} - {f.line}" for test_id, f in failed_ids]
        seconds = 0.3 + total * rng.uniform(0.004, 0.02)
        bad = len(failed_ids)
        summary = f"{bad} failed, {max(0, total - bad)} passed" if bad else f"{total} passed"
        out.append(_rule(f"{summary} in {seconds:.2f}s"))
        who = target if "k" not in args else f"{target} -k {args['k']}"
        intent = rng.choice((f"Running {who} to see where we stand.", f"Let me rerun {who} after that change.",
                             f"Running {who}."))
        if target == "tests/":
            intent = rng.choice(("Running the full suite to check nothing else broke.", "Full test run."))
        for failure in failing:
            self.pending.append(f"ERROR: {failure.line} (last seen turn {self.turn})")
        if failing and rng.random() < 0.12:
            self.pending.append(f"FILE: {target}, last run_tests at turn {self.turn}")
        return _Call("run_tests", args, intent, "\n".join(out), is_error=bool(failing), runtime=seconds + 1.5)

    def bash(self) -> _Call:
        rng = self.rng
        kind = rng.choices(("status", "diff", "log", "ls", "mypy", "ruff", "python", "collect", "cat", "pip"),
                           weights=(14, 14, 6, 8, 8, 6, 14, 3, 6, 2))[0]
        is_error = False
        if kind == "status":
            command = "git status --short"
            changed = sorted({p for p, *_ in self.edits[-12:]}) or ["src/billing/money.py"]
            out = [f" M {p}" for p in changed] + ["?? .pytest_cache/"]
        elif kind == "diff":
            only = None if rng.random() < 0.6 or not self.edits else self.edits[-1][0]
            command = f"git diff {only}" if only else "git diff"
            recent = [e for e in self.edits[-self.size(6, 0.8, 1, 60):] if only in (None, e[0])]
            recent = recent or [("src/billing/money.py", 40, "    pass", "    pass")]
            out = []
            for path, index, old, new in recent:
                out += [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}",
                        f"@@ -{index + 1},7 +{index + 1},7 @@"]
                context = self.file(path)[max(0, index - 3):index + 4]
                out += [f" {ln}" for ln in context[:3]] + [f"-{old}", f"+{new}"] + [f" {ln}" for ln in context[4:]]
        elif kind == "log":
            command = "git log --oneline -n 20"
            out = [f"{rng.getrandbits(28):07x} {rng.choice(DECISIONS)[:60]}" for _ in range(20)]
        elif kind == "ls":
            command = "ls -la src/billing"
            out = ["total 184", "drwxr-xr-x  3 dev dev  4096 Jan 13 16:40 .",
                   "drwxr-xr-x  4 dev dev  4096 Jan 12 09:12 .."]
            out += [f"-rw-r--r--  1 dev dev {len(self.file(p)) * 38:5d} Jan 13 16:5{i % 10} {p.rsplit('/', 1)[-1]}"
                    for i, p in enumerate(SRC_FILES)]
        elif kind == "mypy":
            command = "python -m mypy src/billing"
            n = self.size(3, 1.0, 0, 80) if rng.random() < 0.6 else 0
            out = [f"{rng.choice(SRC_FILES)}:{rng.randint(10, 400)}: error: Unsupported operand types for * "
                   f'("float" and "Decimal")  [operator]' for _ in range(n)]
            out.append(f"Found {n} errors in {min(n, 4)} files (checked 13 source files)" if n
                       else "Success: no issues found in 13 source files")
            is_error = n > 0
        elif kind == "ruff":
            command = "ruff check src tests"
            n = self.size(2, 1.0, 0, 40) if rng.random() < 0.5 else 0
            out = [f"{rng.choice(ALL_FILES)}:{rng.randint(1, 300)}:{rng.randint(1, 80)}: "
                   "F401 [*] `decimal.ROUND_HALF_UP` imported but unused" for _ in range(n)]
            out += ([f"Found {n} error{'s' if n > 1 else ''}.", "[*] fixable with `ruff check --fix`"]
                    if n else ["All checks passed!"])
            is_error = n > 0
        elif kind == "python":
            value = rng.choice(("3.335", "10.005", "2.675", "0.125"))
            command = (f'python -c "from decimal import Decimal, ROUND_HALF_EVEN; '
                       f"print(Decimal('{value}').quantize(Decimal('0.01'), rounding=ROUND_HALF_EVEN))\"")
            out = [str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN))]
        elif kind == "collect":
            command = "python -m pytest --collect-only -q"
            out = [f"{f}::test_{rng.choice(SRC_NAMES)}_{i}"
                   for f in TEST_FILES for i in range(self.size(14, 0.5, 4, 40))]
            out += ["", f"{len(out)} tests collected in 0.21s"]
        elif kind == "cat":
            command = "cat pyproject.toml"
            out = list(PYPROJECT)
        else:
            command = "pip list"
            out = ["Package    Version", "---------- -------"] + [
                f"{name:<18} {rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
                for name in PACKAGES]
        intent = BASH_INTENTS[kind]
        return _Call("bash", {"command": command}, intent, "\n".join(out), is_error=is_error,
                     runtime=rng.uniform(0.2, 8.0))

    def search(self) -> _Call:
        rng = self.rng
        pattern = rng.choice(SEARCH_PATTERNS)
        where = rng.choice(("src", "tests", "."))
        paths = [p for p in ALL_FILES if where == "." or p.startswith(where)]
        want = self.size(14, 0.8, 0, 150)
        out: list[str] = []
        for path in rng.sample(paths, len(paths)):
            lines = self.file(path)
            out += [f"{path}:{i + 1}:{ln}" for i, ln in enumerate(lines) if pattern in ln]
            if len(out) >= want:
                break
        out = out[:want]
        intent = f"Searching for `{pattern}` to find every place that {rng.choice(TOPICS)} touches."
        return _Call("search", {"pattern": pattern, "path": where}, intent,
                     "\n".join(out) if out else "No matches found.", runtime=rng.uniform(0.1, 1.2))

    def notes_write(self) -> _Call:
        rng = self.rng
        section = rng.choice(("Decisions", "Open", "Errors", "Files"))
        if section == "Decisions":
            entry = DECISIONS[self.decisions % len(DECISIONS)] if self.decisions else DECISIONS[0]
        elif section == "Open":
            entry = self.todos[-1] if self.todos else "run the full suite and summarize the change for the PR"
        elif section == "Errors":
            entry = FAILURES[self.active[0]].line if self.active else "suite green"
        else:
            entry = f"{rng.choice(SRC_FILES)} edited at turn {self.turn}"
        entries = self.notes.setdefault(section, [])
        entries.append(entry)
        del entries[:-12]  # the notes file keeps each section short
        count = sum(len(v) for v in self.notes.values())
        return _Call("notes_write", {"section": section, "entry": entry},
                     "Recording this in the notes so it survives compaction.",
                     f"ok: added to ## {section} (notes.md: {count} entries)", runtime=0.05)

    def notes_read(self) -> _Call:
        text = "\n\n".join(f"## {k}\n" + "\n".join(f"- {e}" for e in v) for k, v in self.notes.items())
        return _Call("notes_read", {}, "Reading my notes to pick up where I left off.",
                     text or "(notes.md is empty)", runtime=0.05)

    # ---- markers

    def markers(self) -> list[str]:
        rng = self.rng
        lines: list[str] = []
        seen_errors = set()
        for marker in self.pending:
            if marker.startswith("ERROR: "):
                head = marker.rsplit(" (last seen", 1)[0]
                if head in seen_errors or rng.random() > 0.7:
                    continue
                seen_errors.add(head)
            lines.append(marker)
        self.pending.clear()
        if rng.random() < 0.035:
            text = DECISIONS[self.decisions % len(DECISIONS)]
            if self.decisions >= len(DECISIONS):
                text += " (still holds)"
            self.decisions += 1
            lines.append(f"DECISION: {text}")
        if self.todos and rng.random() < 0.05:
            lines.append(f"DONE: {self.todos.pop(rng.randrange(len(self.todos)))}")
        if len(self.todos) < 8 and rng.random() < 0.05:
            todo = self.new_todo()
            if todo not in self.todos:
                self.todos.append(todo)
                lines.append(f"TODO: {todo}")
        return lines

    def new_todo(self) -> str:
        rng = self.rng
        return rng.choice(TODO_TEMPLATES).format(cur=rng.choice(CURRENCIES), test=rng.choice(TEST_FILES),
                                                 src=rng.choice(SRC_FILES), func=rng.choice(FUNCS))




def generate(turns: int, seed: int = 0, *, tool_mix: dict[str, float], output_scale: float, aside_rate: float,
             pause_rate: float, long_pause_rate: float, parallel_rate: float) -> Trace:
    rng = random.Random(seed)
    options = {"tool_mix": dict(tool_mix), "output_scale": output_scale, "aside_rate": aside_rate,
               "pause_rate": pause_rate, "long_pause_rate": long_pause_rate, "parallel_rate": parallel_rate}
    state = _State(rng=rng, scale=output_scale, clock=parse_ts(START))
    handlers = {name: getattr(state, name) for name in TOOL_NAMES}
    side_mix = {n: w for n, w in tool_mix.items() if n in ("read_file", "search", "bash") and w > 0}
    messages: list[Message] = []

    def stamp(gap: float) -> str:
        state.clock += gap
        return format_ts(round(state.clock))

    for turn in range(1, turns + 1):
        state.turn = turn
        user = None
        paused = False
        if turn == 1:
            user = TASK
        else:
            roll = rng.random()
            if roll < long_pause_rate:
                state.clock += rng.uniform(3600, 3 * 3600)
                paused = True
            elif roll < long_pause_rate + pause_rate:
                state.clock += rng.uniform(6 * 60, 50 * 60)
                paused = True
            if rng.random() < aside_rate:
                user = rng.choice(ASIDES).format(n=turn)
                if user.startswith("Also check the CSV") and 2 not in state.active and len(state.active) < 3:
                    state.active.append(2)
            elif paused and rng.random() < 0.5:
                user = rng.choice(RESUMES)
        if user is not None:
            messages.append(Message(role="user", content=user, ts=stamp(0 if turn == 1 else rng.uniform(3, 40))))

        names = [state.weighted_tool(tool_mix)]
        if side_mix and rng.random() < parallel_rate:
            names.append(state.weighted_tool(side_mix))
        markers = state.markers()
        calls = [handlers[name]() for name in names]

        # The assistant's words: a reaction to the last result, the marker lines, the intent.
        parts = []
        if turn == 1:
            parts.append(PLAN)
            for _ in range(3):
                todo = state.new_todo()
                if todo not in state.todos:
                    state.todos.append(todo)
                    markers.append(f"TODO: {todo}")
        elif rng.random() < 0.45:
            reaction = rng.choice(REACTIONS.get(state.last, REACTIONS[("", False)]))
            if reaction:
                parts.append(reaction)
        if markers:
            parts.append("\n".join(markers))
        parts.append(" ".join(c.intent for c in calls))
        tool_calls = tuple(ToolCall(id=f"t{turn}-c{i + 1}", name=c.name, arguments=c.arguments)
                           for i, c in enumerate(calls))
        messages.append(Message(role="assistant", content="\n\n".join(parts), tool_calls=tool_calls,
                                ts=stamp(_lognormal(rng, 9, 0.6, 2, 40))))
        base = state.clock
        state.last = (calls[-1].name, calls[-1].is_error)
        for call, tc in zip(calls, tool_calls, strict=True):
            state.clock = max(state.clock, base + call.runtime)
            messages.append(Message(role="tool", content=call.content, tool_call_id=tc.id, name=call.name,
                                    is_error=call.is_error, ts=format_ts(round(state.clock))))

    generator = {"profile": PROFILE, "seed": seed, "turns": turns,
                 **{k: (dict(v) if isinstance(v, dict) else v) for k, v in options.items()}}
    session = Session(
        id=f"synth-coding-s{seed}-t{turns}",
        source="ctxsim-synth",
        model=MODEL,
        provider="anthropic",
        window=WINDOW,
        system=SYSTEM,
        tools=tuple(MappingProxyType(t) for t in TOOLS),
        ts=START,
        messages=tuple(messages),
        extra=MappingProxyType({"generator": generator}),
    )
    return Trace(name=session.id, sessions=(session,))
