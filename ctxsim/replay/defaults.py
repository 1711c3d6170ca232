"""The policies `compare` runs when none are named: one list for the command line and the Python API (a
module of its own, light: the command line names it before it loads anything)."""

from __future__ import annotations

COMPARE_POLICIES = ("none", "clear", "compact", "clear+compact", "truncate", "tiered", "mask", "recent", "zones",
                    "scored", "hierarchical", "claude-code", "codex")

__all__ = ["COMPARE_POLICIES"]
