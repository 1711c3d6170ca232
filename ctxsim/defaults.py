"""The policies `compare` runs when none are named: one list for the command line and the Python API."""

from __future__ import annotations

COMPARE_POLICIES = ("none", "clear", "compact", "clear+compact", "truncate", "tiered", "mask", "recent", "zones",
                    "scored", "hierarchical", "claude-code", "codex")
