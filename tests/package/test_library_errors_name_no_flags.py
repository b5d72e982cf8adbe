"""Library errors name the quantity, not the CLI flag that sets it: in the packages below, no string in a
``raise`` statement's arguments names an option (``--set-grid``, ``--frames`` ...). The raise passes the
option's argparse dest instead (``Sim2RealError(message, option="set_grid")``) and the CLI prefixes the
subcommand's flag for it (``sim2real: error: --set-grid: <message>``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "sim2real"
#: The library packages, which know nothing of the CLI's flags.
LIBRARY = ("params", "spatial", "sim", "physics", "engines", "model", "trials", "sysid", "report", "vision")
#: A CLI flag in a message.
FLAG = re.compile(r"--[a-z][a-z-]+")
#: ``path:function`` of raises allowed to name a flag, each with its reason. Empty: none needs to.
ALLOWED: dict[str, str] = {}


def _strings(node: ast.AST) -> list[str]:
    """Every string constant under ``node`` (plain literals and the literal parts of f-strings)."""
    return [sub.value for sub in ast.walk(node) if isinstance(sub, ast.Constant) and isinstance(sub.value, str)]


def _flag_raises(path: Path) -> list[tuple[int, str, str]]:
    """``(line, enclosing function, flag)`` for each raise in ``path`` whose arguments name a flag."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if isinstance(node, ast.Raise) and node.exc is not None:
            for text in _strings(node.exc):
                for flag in FLAG.findall(text):
                    found.append((node.lineno, function, flag))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "<module>")
    return found


def test_the_scan_finds_a_flag_in_a_raise(tmp_path: Path) -> None:
    source = tmp_path / "example.py"
    source.write_text("def f(x):\n    raise ValueError(f'give --set-grid {x}' + 'or not')\n"
                      "def g():\n    raise ValueError('a - b -- c')\n")
    assert _flag_raises(source) == [(2, "f", "--set-grid")]


def test_library_raises_name_no_cli_flag() -> None:
    found = []
    for package in LIBRARY:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            where = path.relative_to(PACKAGE.parent).as_posix()
            for line, function, flag in _flag_raises(path):
                if f"{where}:{function}" not in ALLOWED:
                    found.append(f"{where}:{line} ({function}) names {flag}")
    assert not found, ("library errors name the quantity and pass option=<argparse dest>; the CLI adds the "
                       "flag:\n" + "\n".join(found))


def _flag_constants(path: Path) -> list[tuple[int, str]]:
    """``(line, flag)`` for each module-level constant of ``path`` (the texts messages are built from, such as a
    check's hints) whose strings name a flag."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [(node.lineno, flag) for node in tree.body
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None
            for text in _strings(node.value) for flag in FLAG.findall(text)]


def test_library_constants_name_no_cli_flag() -> None:
    found = [f"{path.relative_to(PACKAGE.parent).as_posix()}:{line} names {flag}"
             for package in LIBRARY for path in sorted((PACKAGE / package).rglob("*.py"))
             for line, flag in _flag_constants(path)]
    assert not found, ("texts the library builds messages from name quantities; an error lists the options to check "
                       "as dests (see=...), and the CLI names their flags:\n" + "\n".join(found))

