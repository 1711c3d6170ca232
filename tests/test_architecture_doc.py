"""docs/architecture.md stays true: its package map names every package and root module of ctxsim and
nothing that is not there, and every module or name it cites in backticks exists; no text a user reads
cites a file the user does not have (the project brief's DESIGN.md)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"


def _map() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    table = text[text.index("<!-- map:start -->"):text.index("<!-- map:end -->")]
    return re.findall(r"^\| `([^`]+)` \|", table, re.MULTILINE)


def test_the_map_names_every_package_and_root_module_and_nothing_else():
    listed = _map()
    assert len(listed) == len(set(listed))
    package = ROOT / "ctxsim"
    present = {f"ctxsim/{p.name}/" for p in package.iterdir() if (p / "__init__.py").exists()}
    present |= {f"ctxsim/{p.name}" for p in package.glob("*.py") if p.name != "__init__.py"}
    assert set(listed) == present


def test_every_module_and_name_the_page_cites_exists():
    cited = set(re.findall(r"`((?:replay|analysis|formats|policies|reports|loss|tune|pricing|caching|tokens)"
                           r"(?:\.[a-z_]+)+)`", PAGE.read_text(encoding="utf-8")))
    assert cited  # the page cites some
    for name in sorted(cited):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):  # the longest module, then attributes of it
            try:
                found: object = importlib.import_module("ctxsim." + ".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for attr in parts[cut:]:
                found = getattr(found, attr)
            break
        else:
            raise AssertionError(f"docs/architecture.md cites {name}, which ctxsim does not have")


def test_no_text_cites_the_design_document_users_do_not_have():
    texts = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "ctxsim").rglob("*.py")]
    citing = [str(p.relative_to(ROOT)) for p in texts if "DESIGN.md" in p.read_text(encoding="utf-8")]
    assert citing == []
