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
SHARED = {"errors", "paths", "filemodes", "process_deadline", "fixed_rate"}
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


def _module_name(path: Path) -> str:
    """``sim2real/sysid/fit.py`` -> ``sim2real.sysid.solve.fit``; a package's ``__init__.py`` names the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _face(package: str) -> dict[str, str]:
    """A lazy face's names and the modules that define them (its ``_FACE``; empty for a package without one)."""
    init = PACKAGE.parent / Path(*package.split(".")) / "__init__.py"
    if not init.is_file():
        return {}
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "_FACE":
            return {name: f"{package}.{module}" for name, module in ast.literal_eval(node.value).items()}
    return {}


def _module_imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules ``path`` imports at any depth (deferred and type-checking imports included):
    ``from a.b import c`` imports ``a.b.c`` when that is a module, the module that defines ``c`` when ``a.b`` is
    a lazy face (``_FACE``), else ``a.b``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            face = _face(node.module)
            targets = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else
                       face.get(alias.name, node.module) for alias in node.names]
        found |= {t for t in targets if t in modules}
    return found


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (module -> modules it imports), or [] when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return []


def _import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports. A package's own ``__init__`` re-exporting its modules is
    not an edge back to the package from those modules (the face imports the rooms, not the reverse)."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    return {name: _module_imports(path, modules) - {name} for name, path in paths.items()}


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_modules_of_the_package() -> None:
    assert _cycle(_import_graph()) == []


def test_the_engine_contract_and_mujoco_import_no_module_of_our_engine() -> None:
    graph = _import_graph()
    offenders = sorted(f"{name} imports {target}" for name, targets in graph.items()
                       if name.startswith("sim2real.sim") or name == "sim2real.engines.mujoco_world"
                       for target in targets if target.startswith("sim2real.physics"))
    assert offenders == []


#: The subpackages of sysid with a lazy face (``_FACE``): callers elsewhere import through it.
FACED = ("problem", "residuals", "solve", "uncertainty", "prediction", "files")


def test_callers_import_the_sysid_subpackages_through_their_faces() -> None:
    """Outside a subpackage of sysid, no module of the package or of the benchmarks imports one of its modules
    directly; the face names what it exports (``__all__`` is its ``_FACE``'s names) and each name is the one its
    module defines."""
    import importlib

    offenders = []
    for base in (PACKAGE, ROOT / "benchmarks"):
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                    continue
                parts = node.module.split(".")
                if (len(parts) == 4 and parts[:2] == ["sim2real", "sysid"] and parts[2] in FACED
                        and not rel.startswith(f"sim2real/sysid/{parts[2]}/")):
                    offenders.append(f"{rel}:{node.lineno} imports {node.module}")
    assert offenders == []
    for sub in FACED:
        package = importlib.import_module(f"sim2real.sysid.{sub}")
        face = _face(f"sim2real.sysid.{sub}")
        assert sorted(package.__all__) == sorted(face), sub
        for name, module in face.items():
            assert getattr(package, name) is getattr(importlib.import_module(module), name), f"{sub}.{name}"
