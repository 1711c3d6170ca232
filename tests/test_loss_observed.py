"""Observed re-fetches (ctxsim.loss.observed): each product's detector on small hand-made calls, and the re-fetches
after a compaction on a hand-made two-part session; identifier kinds (ctxsim.loss.kinds)."""

from __future__ import annotations

import pytest

from ctxsim.loss.kinds import discounted, kind, redacted_identifiers
from ctxsim.loss.observed import Target, detector, detectors, observe
from ctxsim.loss.observed._shell import shell_target
from ctxsim.model import Event, Message, Session, ToolCall


def call(name: str, arguments: object) -> ToolCall:
    return ToolCall("c", name, arguments)


@pytest.mark.parametrize(("source", "name", "arguments", "expected"), [
    ("claude-code", "Read", {"file_path": "/repo/src/a.py"}, Target("file", "/repo/src/a.py")),
    ("claude-code", "Read", {"file_path": "/repo/src/a.py", "offset": 40, "limit": 60},
     Target("file", "/repo/src/a.py", sliced=True)),
    ("claude-code", "Edit", {"file_path": "src/a.py", "old_string": "x"}, Target("file", "src/a.py", reads=False)),
    ("claude-code", "Grep", {"pattern": "def main", "path": "src"}, Target("search", "pattern=def main path=src")),
    ("claude-code", "Bash", {"command": "cd /repo && sed -n '10,80p' src/a.py"}, Target("file", "src/a.py", True)),
    ("claude-code", "Bash", {"command": "git   status"}, Target("command", "git status")),
    ("claude-code", "WebFetch", {"url": "https://example.org/x", "prompt": "p"}, Target("url", "https://example.org/x")),
    ("codex", "shell", {"command": ["bash", "-lc", "nl -ba src/a.py | sed -n '1,200p'"]},
     Target("file", "src/a.py", True)),
    ("codex", "exec_command", {"cmd": "rg -n foo src"}, Target("search", "rg -n foo src")),
    ("codex", "apply_patch", "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** End Patch",
     Target("file", "src/a.py", reads=False)),
    ("codex", "exec_command", "[REDACTED_ARGUMENTS len=83 sha=b4e1e5f7]", None),
    ("gemini-cli", "read_file", {"absolute_path": "/tmp/t/created.txt"}, Target("file", "/tmp/t/created.txt")),
    ("gemini-cli", "run_shell_command", {"command": "cat README.md"}, Target("file", "README.md")),
    ("cline", "read_file", {"path": "src/a.ts"}, Target("file", "src/a.ts")),
    ("cline", "search_files", {"path": "src", "regex": "TODO"}, Target("search", "path=src regex=TODO")),
    ("openhands", "str_replace_editor", {"command": "view", "path": "/workspace/app.js", "view_range": [1, 40]},
     Target("file", "/workspace/app.js", True)),
    ("openhands", "str_replace_editor", {"command": "create", "path": "/workspace/app.js", "file_text": "x"},
     Target("file", "/workspace/app.js", reads=False)),
    ("openhands", "execute_bash", {"command": "pytest -q"}, Target("command", "pytest -q")),
    ("mini-swe-agent", "bash", {"command": "cd /testbed && cat astropy/modeling/separable.py"},
     Target("file", "astropy/modeling/separable.py")),
])
def test_each_products_detector_names_what_a_call_fetched(source: str, name: str, arguments: object,
                                                          expected: Target | None) -> None:
    assert detector(source).target(call(name, arguments)) == expected


def test_every_product_has_its_detector_and_others_the_generic_one() -> None:
    assert {"claude-code", "codex", "gemini-cli", "cline", "openhands", "generic"} <= set(detectors())
    assert detector("aider").product == "generic" and detector(None).product == "generic"


def test_a_relative_path_is_the_same_file_as_its_absolute_form() -> None:
    assert Target("file", "/repo/src/a.py").same(Target("file", "src/a.py"))
    assert not Target("file", "/repo/src/a.py").same(Target("file", "b/a.py"))
    assert not Target("file", "src/a.py").same(Target("command", "src/a.py"))


def test_a_reread_is_one_usual_slice_capped_by_the_source_and_never_negative() -> None:
    claude = detector("claude-code")
    assert claude.reread_tokens("Read", 11_202) == claude.slice_tokens
    assert claude.reread_tokens("Read", 300) == 300
    assert claude.reread_tokens("Bash", 5_000) == 5_000  # a command is run again whole
    assert claude.reread_tokens("Read", -3_700) == 0


def _count(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


def two_parts() -> list[Session]:
    """Before: reads a.py and b.py, runs `make test`; after the compaction: the summary, re-reads a.py (a slice),
    edits b.py then reads it, reads c.py (never held), runs `make test` again and reads a.py again."""
    def read(n: str, path: str, body: str, **extra: object) -> list[Message]:
        return [Message("assistant", "", tool_calls=(ToolCall(n, "Read", {"file_path": path, **extra}),)),
                Message("tool", body, tool_call_id=n, name="Read")]

    def bash(n: str, command: str, body: str) -> list[Message]:
        return [Message("assistant", "", tool_calls=(ToolCall(n, "Bash", {"command": command}),)),
                Message("tool", body, tool_call_id=n, name="Bash")]

    before = Session(id="s", source="claude-code", messages=(
        Message("user", "fix the tests"), *read("1", "/r/src/a.py", "one two three four"),
        *read("2", "/r/src/b.py", "five six"), *bash("3", "make test", "FAILED x y z"),
        Message("assistant", "done")))
    after = Session(id="s/part-2", source="claude-code", extra={"continues": "s"},
                    events=(Event("compaction", 0, None, {"trigger": "auto"}),), messages=(
        Message("summary", "the summary mentions /r/src/a.py"), Message("user", "go on"),
        *read("4", "src/a.py", "two three", offset=2, limit=2),
        Message("assistant", "", tool_calls=(ToolCall("5", "Edit", {"file_path": "/r/src/b.py"}),)),
        Message("tool", "ok", tool_call_id="5", name="Edit"),
        *read("6", "/r/src/b.py", "five six seven"), *read("7", "/r/src/c.py", "new file text"),
        *bash("8", "make   test", "passed"), *read("9", "/r/src/a.py", "one two three four"),
        Message("assistant", "fixed")))
    return [before, after]


def test_observed_refetches_after_a_compaction_are_the_targets_held_before_each_once() -> None:
    [seen] = observe(two_parts(), _count)
    assert seen.kind == "compaction" and seen.session == "s/part-2" and seen.held_targets == 3
    got = [(r.tool, r.target.key, r.target.sliced, r.tokens) for r in seen.refetches]
    # a.py once (its first, sliced re-read), b.py read after its edit, the identical command; c.py never held
    assert got == [("Read", "src/a.py", True, 2), ("Read", "/r/src/b.py", False, 3), ("Bash", "make test", False, 1)]
    assert seen.to_json() == {"refetches": 3, "refetch_tokens": 6, "sliced": 1, "by_kind": {"command": 1, "file": 2}}


def test_a_product_clearing_inside_a_session_is_observed_too() -> None:
    before, after = two_parts()
    whole = Session(id="w", source="claude-code", messages=before.messages + after.messages[2:],
                    events=(Event("microcompact", len(before.messages), None, {}),))
    [seen] = observe([whole], _count)
    assert seen.kind == "clearing" and len(seen.refetches) == 3


def test_shell_commands_that_are_not_reads_are_their_own_target() -> None:
    assert shell_target(["zsh", "-lc", "ls -la"]) == Target("command", "ls -la")
    assert shell_target("head -n 50 src/x.py") == Target("file", "src/x.py", True)
    assert shell_target("") is None and shell_target(42) is None


# ---------------------------------------------------------------- kinds


@pytest.mark.parametrize(("identifier", "expected"), [
    ("src/billing/tax.py", "path"), ("tax.py", "path"), ("https://example.org/a", "url"),
    ("TypeError: bad operand", "error"), ("ReplayEngine", "symbol"), ("os.path.join", "symbol"),
    ("format_money", "symbol"), ("3f2a9bc1", "hash"), ("INV-2041", "ticket"), ("0.15", "number"), ("276", "number"),
    ("12000", "number"), ("KiB", "unit"), ("12MB", "unit"), ("git status -s", "command"), ("hello world", "quoted"),
])
def test_identifier_kinds(identifier: str, expected: str) -> None:
    assert kind(identifier) == expected
    assert discounted(identifier) == (expected in ("number", "unit"))


def test_redaction_markers_hide_their_identifiers() -> None:
    hidden = redacted_identifiers("see [REDACTED_TEXT len=3021 sha=dc9e82a0] and src/a.py")
    assert "dc9e82a0" in hidden and "src/a.py" not in hidden
    assert redacted_identifiers("no marker 3021 dc9e82a0") == set()
