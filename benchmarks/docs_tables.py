"""The documentation's generated tables: benchmark figures and the parameter registry (not a benchmark).

Pages under ``docs/`` (and ``README.md``) hold tables between ``<!-- table:NAME -->`` and
``<!-- /table:NAME -->`` markers. This module renders each table from its source and rewrites what
lies between the markers:

* benchmark tables from the stored outputs ``docs/benchmarks/<benchmark>.json`` (what ``python -m
  benchmarks.<benchmark> --json`` printed, wrapped with the command, commit, date and machine load
  of the run);
* ``parameters`` from the registry (:data:`sim2real.params.PARAMETERS`).

Usage::

    python -m benchmarks.docs_tables                 # rewrite the tables in docs/**/*.md and README.md
    python -m benchmarks.docs_tables --check         # exit 1 if a table differs from its source
    python -m benchmarks.docs_tables --run engine    # run benchmarks.engine --json, store its output, rewrite
    python -m benchmarks.docs_tables --run trial -- --repeat 5   # extra arguments for the benchmark
    python -m benchmarks.docs_tables --run design_truth --as design_truth_exact -- --friction-spread 0
                                                     # a second stored run of one benchmark, under its own name

``--json`` prints a JSON summary of what was done (``make bench`` runs every ``benchmarks/*.py``
with ``--json``; this one only rewrites tables from the stored outputs, in well under a second).
A table whose source is missing is left as it is and listed under ``missing``.

MkDocs loads this file as a hook (``hooks:`` in ``mkdocs.yml``): every page is built with freshly
rendered tables. A stored table of benchmark figures that differs from its source is a warning, so
that ``mkdocs build --strict`` (``make docs``) fails until the tables are rewritten; the tables
rendered from the code itself (:data:`FROM_CODE`) are only noted, since the site shows them fresh.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # MkDocs loads this file as a hook, outside the package
    sys.path.insert(0, str(ROOT))

from benchmarks.tables.bands import band_modes_table, band_truth_table, start_error_table  # noqa: E402
from benchmarks.tables.code import inventory_table, parameters_table  # noqa: E402
from benchmarks.tables.design import design_speed_table, design_truth_table  # noqa: E402
from benchmarks.tables.fits import (  # noqa: E402
    basin_table,
    coverage_table,
    crossfit_table,
    cube_toss_table,
    flat_block_truth_table,
    headline_table,
)
from benchmarks.tables.frames import frames_truth_table  # noqa: E402
from benchmarks.tables.runs import demo_runs_table, faults_table, hardware_table, robustness_table  # noqa: E402
from benchmarks.tables.speed import optimizer_table, scale_table, speed_table  # noqa: E402
from benchmarks.tables.store import DOCS, run_benchmark  # noqa: E402
from benchmarks.tables.vision import vision_table  # noqa: E402

MARKER = re.compile(r"(<!-- table:(?P<name>[a-z0-9_]+) -->\n)(?P<body>.*?)(<!-- /table:(?P=name) -->)", re.DOTALL)

Table = Callable[[], "str | None"]


TABLES: dict[str, Table] = {
    "parameters": parameters_table,
    "crossfit": crossfit_table,
    "speed": speed_table,
    "hardware": hardware_table,
    "robustness": robustness_table,
    "demo_runs": demo_runs_table,
    "flat_block_truth": flat_block_truth_table,
    "band_truth": band_truth_table,
    "band_modes": band_modes_table,
    "start_error": start_error_table,
    "frames_truth": frames_truth_table,
    "design_truth": design_truth_table,
    "design_speed": design_speed_table,
    "vision": vision_table,
    "basin": basin_table,
    "cube_toss": cube_toss_table,
    "scale": scale_table,
    "faults": faults_table,
    "optimizer": optimizer_table,
    "headline": headline_table,
    "coverage": coverage_table,
    "inventory": inventory_table,
}


# ---------------------------------------------------------------------------------------------------------------------
# rewriting pages


def render(markdown: str, tables: Mapping[str, Table] | None = None) -> tuple[str, list[str], list[str]]:
    """``markdown`` with every known table rendered afresh.

    Returns
    -------
    tuple
        The new text, the names of tables that changed, the names left as they were (unknown name
        or no source).
    """
    tables = TABLES if tables is None else tables
    changed: list[str] = []
    missing: list[str] = []
    cache: dict[str, str | None] = {}

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in cache:
            cache[name] = tables[name]() if name in tables else None
        body = cache[name]
        if body is None:
            missing.append(name)
            return match.group(0)
        body = body.rstrip("\n") + "\n"
        if body != match.group("body"):
            changed.append(name)
        return match.group(1) + body + match.group(4)

    return MARKER.sub(replace, markdown), changed, missing


def rewrite(pages: Sequence[Path], write: bool) -> dict[str, Any]:
    """Render the tables of ``pages``; write the changed pages when ``write``. Returns a summary."""
    summary: dict[str, Any] = {"pages": [], "changed": {}, "missing": {}}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        new, changed, missing = render(text)
        name = str(page.relative_to(ROOT))
        summary["pages"].append(name)
        if changed:
            summary["changed"][name] = changed
            if write:
                page.write_text(new, encoding="utf-8")
        if missing:
            summary["missing"][name] = missing
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    """Command line; see the module docstring."""
    parser = argparse.ArgumentParser(description="Rewrite the documentation's generated tables (benchmark figures "
                                     "from docs/benchmarks/*.json, the parameter registry). Not a benchmark.")
    parser.add_argument("--json", action="store_true", help="print a JSON summary of what was done")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a table is stale")
    parser.add_argument("--run", metavar="BENCHMARK", action="append", default=[],
                        help="first run benchmarks.BENCHMARK --json and store its output (repeatable)")
    parser.add_argument("--as", dest="stored_as", metavar="NAME",
                        help="with one --run: store its output as docs/benchmarks/NAME.json (a second stored run of "
                             "one benchmark with other arguments)")
    parser.add_argument("extra", nargs="*", help="after --: arguments for the benchmark of --run")
    args = parser.parse_args(argv)
    if args.stored_as is not None and (len(args.run) != 1 or not re.fullmatch(r"[a-z0-9_]+", args.stored_as)):
        parser.error("--as takes one name of lower-case letters, digits and underscores, with exactly one --run")
    started = time.perf_counter()
    stored = [str(run_benchmark(name, args.extra, args.stored_as).relative_to(ROOT)) for name in args.run]
    summary = rewrite([*sorted(DOCS.glob("**/*.md")), ROOT / "README.md"], write=not args.check)
    summary = {"tool": "docs_tables", "stored": stored, **summary, "wall_s": round(time.perf_counter() - started, 3)}
    if args.json:
        print(json.dumps(summary))
    else:
        for page, names in summary["changed"].items():
            print(f"{page}: {'stale' if args.check else 'rewrote'} {', '.join(names)}")
        for page, names in summary["missing"].items():
            print(f"{page}: no source for {', '.join(names)} (left as it was)")
    return 1 if args.check and summary["changed"] else 0


# ---------------------------------------------------------------------------------------------------------------------
# MkDocs hook (mkdocs.yml: hooks)

_log = logging.getLogger("mkdocs.plugins.docs_tables")


#: Tables rendered from the code itself (the registry, the benchmark modules): the site always shows them
#: fresh, and a page whose stored copy lags is only noted; a stale table of benchmark figures is a warning.
FROM_CODE = frozenset({"parameters", "inventory"})


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Build every page with fresh tables; a stored table of benchmark figures that differs from its source
    (edited by hand, or its stored output replaced without rewriting) is a warning, which fails ``--strict``."""
    new, changed, _missing = render(markdown)
    stale = sorted(set(changed) - FROM_CODE)
    lagging = sorted(set(changed) & FROM_CODE)
    advice = "run '.venv/bin/python -m benchmarks.docs_tables' to rewrite them"
    if stale:
        _log.warning("%s: generated table(s) %s differ from their source; %s", page.file.src_path,
                     ", ".join(stale), advice)
    if lagging:
        _log.info("%s: table(s) %s built from the current code; the page's copy lags: %s", page.file.src_path,
                  ", ".join(lagging), advice)
    return new


if __name__ == "__main__":
    sys.exit(main())
