"""OpenCode (issue 30): `opencode export` JSON and the storage folder, read alike; each step a request with its
own tokens and cost. Fixtures: tests/fixtures/make_reader_fixtures.py (values by hand there)."""

from __future__ import annotations

from pathlib import Path

from ctxsim.discover import discovered_files
from ctxsim.formats import detect, read_trace

READERS = Path(__file__).parent / "fixtures" / "readers"
EXPORT = READERS / "opencode" / "export-fix-rounding.json"
HOME = READERS / "opencode-home"
# (prompt, cache read, cache write, output, recorded cost) per request, by hand from the fixture's tokens
EXPECTED = [(3000, 0, 2000, 50, "0.01125"), (3080, 3000, 60, 15, "0.00141"), (3105, 3100, 0, 8, "0.001065")]


def accounting(path: Path) -> list[tuple[int, int, int, int, str | None]]:
    session = read_trace(str(path)).sessions[0]
    return [(m.usage.input_tokens, m.usage.cache_read_tokens, m.usage.cache_write_tokens, m.usage.output_tokens,
             m.usage.extra.get("cost_usd")) for m in session.messages if m.role == "assistant" and m.usage]


def test_export_is_opencode_not_openai_chat_and_each_step_is_a_request():
    assert detect(str(EXPORT), EXPORT.read_bytes()[:65536]).name == "opencode"
    assert accounting(EXPORT) == EXPECTED
    session = read_trace(str(EXPORT)).sessions[0]
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    first = session.messages[1]
    assert first.tool_calls[0].id == "toolu_01" and first.tool_calls[0].name == "read"
    assert first.thinking == "Read it first." and first.usage is not None
    assert first.usage.extra["reasoning_tokens"] == 10
    assert session.messages[2].content == "x = round(1.005, 2)\n"
    assert session.model == "claude-sonnet-4-5" and session.provider == "anthropic"


def test_storage_folder_is_found_at_home_and_reads_as_the_export_does():
    found = discovered_files("opencode", {"HOME": str(HOME)})
    assert [(Path(p).name, fmt) for p, fmt in found] == [("ses_7c1f00aa1ffeAbCdEf0123456789.json", "opencode")]
    stored = read_trace(found[0][0]).sessions[0]
    exported = read_trace(str(EXPORT)).sessions[0]
    assert stored.messages == exported.messages
    assert accounting(Path(found[0][0])) == EXPECTED


def test_opencode_data_dir_replaces_the_default_folder():
    env = {"HOME": "/nonexistent", "OPENCODE_DATA_DIR": str(HOME / ".local" / "share" / "opencode")}
    assert len(discovered_files("opencode", env)) == 1
