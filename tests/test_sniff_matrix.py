"""The sniffer matrix (issue 30): every fixture file is fed to every format's sniffer; exactly its own format
accepts it and every other one refuses it with a reason. A file no format reads alone (a Cline task's
metadata, OpenCode's message and part files, read through the file that points to them) is refused by all."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxsim.formats import BOM, SNIFF_BYTES, formats

FIXTURES = Path(__file__).parent / "fixtures"
READERS = FIXTURES / "readers"

# Folders whose every file is of one format (recursively), and single files; anything else found under
# tests/fixtures must be listed here too, so a new fixture cannot escape the matrix.
FOLDERS = {
    "aider": "aider", "claude-code": "claude-code", "codex": "codex", "codex-0104": "codex",
    "gemini-cli": "gemini-cli", "mini-swe-agent": "mini-swe-agent", "otel-genai": "otel-genai",
    "readers/codex": "codex", "readers/gemini-cli": "gemini-cli", "readers/opencode": "opencode",
    "readers/cline-ui-only": "cline", "readers/cline-metrics": "cline", "readers/copilot-home": "copilot-cli",
    "readers/pi-home": "pi", "readers/qwen-home": "qwen-code",
    "readers/amp-home": "amp", "readers/kimi-home": "kimi-cli",
    "readers/crush-project": "crush", "readers/goose-home": "goose",
    "readers/opencode-db-home": "opencode-db",
}
FILES = {
    "tiny/aider.chat.history.md": "aider", "tiny/anthropic-messages.jsonl": "anthropic-messages",
    "tiny/claude-code.jsonl": "claude-code", "tiny/codex.jsonl": "codex", "tiny/gemini-cli.json": "gemini-cli",
    "tiny/mini-swe-agent.traj.json": "mini-swe-agent", "tiny/native.jsonl": "native",
    "tiny/openai-chat.json": "openai-chat", "tiny/openhands.json": "openhands", "tiny/otel-genai.json": "otel-genai",
    "tiny/swe-agent.traj": "swe-agent", "tiny/cline/ui_messages.json": "cline",
    "tiny/cline/api_conversation_history.json": "cline",  # newer Cline: modelInfo on its messages
    "cline/1768323361000/ui_messages.json": "cline",
    "cline/1768323361000/api_conversation_history.json": None,  # older Cline: plain Anthropic messages
    "cline/1768323361000/task_metadata.json": None,
    "readers/droid-home/.factory/sessions/-home-u-proj/4f1c9d2e-7a3b-4c5d-9e8f-0a1b2c3d4e5f.jsonl": "droid",
    "readers/droid-home/.factory/sessions/-home-u-proj/4f1c9d2e-7a3b-4c5d-9e8f-0a1b2c3d4e5f.settings.json": None,
}
NONE_UNDER = ("readers/opencode-home/.local/share/opencode/storage/message/",
              "readers/opencode-home/.local/share/opencode/storage/part/")
OPENCODE_SESSIONS = "readers/opencode-home/.local/share/opencode/storage/session/"


def expected(relative: str) -> str | bool | None:
    """The one format that must accept the file, None for none, False when the file is not in the tables."""
    if relative in FILES:
        return FILES[relative]
    if relative.startswith(NONE_UNDER):
        return None
    if relative.startswith(OPENCODE_SESSIONS):
        return "opencode"
    for folder, fmt in FOLDERS.items():
        if relative.startswith(folder + "/"):
            return fmt
    return False


def fixture_files() -> list[str]:
    return sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*")
                  if p.is_file() and p.suffix != ".py" and "/.cache/" not in str(p))


def test_every_fixture_is_in_the_matrix_and_every_format_has_fixtures():
    files = fixture_files()
    assert [f for f in files if expected(f) is False] == []
    claimed = {expected(f) for f in files}
    assert set(formats()) <= claimed, f"formats without a fixture: {sorted(set(formats()) - claimed)}"


@pytest.mark.parametrize("relative", fixture_files())
def test_exactly_its_own_sniffer_accepts_each_fixture(relative):
    head = (FIXTURES / relative).read_bytes()[:SNIFF_BYTES].removeprefix(BOM)
    verdicts = {name: info.sniff(head) for name, info in formats().items()}
    accepted = sorted(name for name, why in verdicts.items() if why is None)
    want = expected(relative)
    assert accepted == ([] if want is None else [want])
    for name, why in verdicts.items():
        if why is not None:
            assert isinstance(why, str) and why.strip(), f"{name} refused {relative} without a reason"
