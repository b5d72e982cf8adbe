"""Tables rendered from the code itself: the parameter registry and the inventory of benchmark modules."""

from __future__ import annotations

from benchmarks.tables.format import md_table
from benchmarks.tables.store import ROOT, load


def parameters_table() -> str:
    """Every registered parameter: name, unit, nominal value, bounds, which gradients a fit can use, meaning."""
    from sim2real.control.sim_platform import PD_PARAMS, SERVO_PARAMS
    from sim2real.engines import ENGINES, differentiable
    from sim2real.params import PARAMETERS

    labels = {"ours": "ours", "mujoco": "MuJoCo"}
    by_engine = {engine: set(differentiable(engine)) for engine in ENGINES}
    rows = []
    for p in PARAMETERS:
        if p.frozen:
            gradients = "frozen"
        else:
            found = [labels.get(engine, engine) for engine, names in by_engine.items() if p.name in names]
            if p.name in SERVO_PARAMS or p.name in PD_PARAMS:
                found.append("simulated arm")
            gradients = ", ".join(found) or "none"
        meaning = p.description.replace("|", "\\|") + (" (integer)" if p.kind is int else "")
        rows.append((f"`{p.name}`", p.unit, f"{p.nominal:g}", f"[{p.lower:g}, {p.upper:g}]", gradients, meaning))
    return md_table(("name", "unit", "nominal", "bounds", "gradients", "meaning"), rows)


def inventory_table() -> str:
    """Every benchmark module: what it measures (its docstring's first paragraph), and its stored output."""
    import ast

    rows = []
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        if path.stem in ("__init__", "docs_tables"):  # the table renderer is no benchmark
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        summary = " ".join(doc.split("\n\n")[0].split()).removeprefix("Benchmark: ").removeprefix("Benchmark of ")
        summary = summary[:1].upper() + summary[1:]
        record = load(path.stem)
        stored = "not stored" if record is None else f"{record['date']}, {record['wall_s']:.0f} s"
        rows.append((f"`benchmarks.{path.stem}`", summary.replace("|", "\\|"), stored))
    return md_table(("module", "measures", "stored output"), rows)
