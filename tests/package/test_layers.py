"""The layers of docs/architecture.md are the layers of the code: each package imports only the packages its
row names (at any depth of its modules, deferred imports included), and nothing in the package imports the
tests' NumPy oracle."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sim2real"
#: Small modules any layer may use (the architecture page says so).
SHARED = {"errors", "paths", "filemodes", "process_deadline"}
ROW = re.compile(r"^\| `sim2real\.(?P<name>\w+)` \| .* \| (?P<imports>[^|]*) \|$")


def _documented() -> dict[str, set[str] | None]:
    """Package -> the packages its row allows (None: "all of the above" / "everything above ...")."""
    rows: dict[str, set[str] | None] = {}
    order: list[str] = []
    for line in (ROOT / "docs" / "architecture.md").read_text().splitlines():
        match = ROW.match(line.strip())
        if not match:
            continue
        name, text = match["name"], match["imports"].strip()
        if text.startswith("all of the above"):
            rows[name] = set(order)
        elif text.startswith("everything above but "):
            rows[name] = set(order) - {p.strip() for p in text.removeprefix("everything above but ").split(",")}
        elif text.startswith("everything above"):
            rows[name] = set(order)
        else:
            bare = re.sub(r"\s*\([^)]*\)", "", text)  # "sysid (what of it)" names sysid
            rows[name] = {p.strip() for p in bare.split(",") if p.strip() not in ("—", "")}
        order.append(name)
    return rows


def _imports(path: Path) -> set[str]:
    """The top-level modules and ``sim2real`` subpackages ``path`` imports (``sim2real.x``: ``x``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names
                                     if node.module == "sim2real"]
        for name in names:
            parts = name.split(".")
            found.add(parts[1] if parts[0] == "sim2real" and len(parts) > 1 else parts[0])
    return found


def test_every_package_is_documented_and_imports_only_what_its_row_allows() -> None:
    rows = _documented()
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages <= set(rows), f"packages without a row in docs/architecture.md: {packages - set(rows)}"
    offenders = []
    for name in sorted(packages):
        allowed = (rows[name] or set()) | SHARED | {name}
        for path in sorted((PACKAGE / name).rglob("*.py")):
            used = _imports(path) & (packages | SHARED)
            # physics names the engines' World interface for type checking only (the page says so).
            if name == "physics":
                used -= {"engines"}
            offenders += [f"{path.relative_to(ROOT)} imports sim2real.{u}" for u in sorted(used - allowed)]
    assert offenders == []


def test_nothing_in_the_package_imports_the_tests_oracle() -> None:
    offenders = [str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py") if {"oracle", "tests"} & _imports(p)]
    assert offenders == []
