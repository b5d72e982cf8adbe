"""Engines enter through their registry entry and its capabilities: no engine name is compared elsewhere."""

from __future__ import annotations

import re
from pathlib import Path

from sim2real.engines import ENGINES, engine

ROOT = Path(__file__).resolve().parents[2] / "sim2real"
NAME_BRANCH = re.compile(r"""[=!]=\s*["'](?:""" + "|".join(ENGINES) + r""")["']|["'](?:"""
                         + "|".join(ENGINES) + r""")["']\s*[=!]=""")


def test_no_engine_name_is_compared_outside_the_registry() -> None:
    found = [f"{path.relative_to(ROOT)}:{n}" for path in ROOT.rglob("*.py") if path.name != "registry.py"
             for n, line in enumerate(path.read_text().splitlines(), 1) if NAME_BRANCH.search(line)]
    assert found == []


def test_every_engine_declares_its_capabilities() -> None:
    for name in ENGINES:
        entry = engine(name)
        assert entry.description and entry.jacobian
        assert isinstance(entry.differentiates_arm, bool)
        assert set(entry.differentiable()) > set()
