"""Codex's tools: `shell` (argv, often `["bash", "-lc", SCRIPT]`) and `exec_command` (`cmd`), read through
`_shell` (`sed -n 1,200p FILE`, `cat`, `nl -ba FILE | sed -n ...`, `rg`); `apply_patch` changes files (the
patch's `*** Update File:` / `*** Add File:` lines: the context held them; no re-fetch). Codex reads files in
`sed -n` windows of about 200 lines: a re-read is sized as one (`SLICE_TOKENS`), capped by the source."""

from __future__ import annotations

import re

from ctxsim.loss.observed import Detector, Target, arguments, register
from ctxsim.loss.observed._shell import shell_target
from ctxsim.model import ToolCall

SLICE_TOKENS = 2_000
_PATCHED = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)
SHELL_TOOLS = ("shell", "exec_command", "local_shell", "container.exec", "shell_command")


def target(call: ToolCall) -> Target | None:
    args = arguments(call)
    if call.name in SHELL_TOOLS:
        return shell_target(args.get("command", args.get("cmd")))
    if call.name == "apply_patch":
        text = call.arguments if isinstance(call.arguments, str) else str(args.get("input") or "")
        found = _PATCHED.search(text)
        return Target("file", found.group(1).strip(), reads=False) if found else None
    return None


WRITES = frozenset(["apply_patch", "update_plan"])
register(Detector("codex", target, SLICE_TOKENS, frozenset(SHELL_TOOLS), WRITES, module=__name__))
