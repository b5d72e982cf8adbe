"""The report grouped by object: trials of several objects (flat blocks of steel, aluminium, ...).

When the trials of a run carry object labels (trial.json ``object.name``, set by ``import bag
--object`` or ``import csv --object``) and more than one object appears, the report adds a table
of the sim-vs-real errors per run and object, so that a fit over several objects
(``fit --per-object``) is judged object by object.
"""

from __future__ import annotations

from collections.abc import Sequence

from sim2real.report.document import Block, Heading, Paragraph, Table
from sim2real.report.tables import ExperimentTable

#: Label of trials without an object.
NO_OBJECT = "(none)"


def _objects(table: ExperimentTable) -> list[str]:
    return sorted({row.obj or NO_OBJECT for row in table.rows})


def _cell(value: float | None, scale: float, digits: int) -> str:
    return "n/a" if value is None else f"{scale * value:.{digits}f}"


def object_rows(table: ExperimentTable) -> list[list[str]]:
    """One row per object of ``table``: run, object, trials (counted/listed), mean final position error
    in the table plane (mm), mean yaw error (deg), mean path RMS (mm), flip agreement (%)."""
    rows = []
    for name in _objects(table):
        sub = ExperimentTable(table.label, tuple(r for r in table.rows if (r.obj or NO_OBJECT) == name))
        agreement = sub.flip_agreement
        rows.append([table.label, name, f"{len(sub.counted)}/{len(sub.rows)}",
                     _cell(sub.mean_final_error_xy_m, 1000.0, 1), _cell(sub.mean_yaw_error_deg, 1.0, 1),
                     _cell(sub.mean_path_rms_m, 1000.0, 1),
                     "n/a" if agreement is None else f"{100.0 * agreement:.0f}"])
    return rows


def object_blocks(tables: Sequence[ExperimentTable]) -> list[Block]:
    """The "By object" section, or nothing when no run holds trials of more than one object."""
    if not any(len(_objects(t)) > 1 for t in tables):
        return []
    rows = [row for table in tables for row in object_rows(table)]
    header = ("run", "object", "trials (counted/listed)", "final position error (mm)", "yaw error (deg)",
              "path RMS (mm)", "flips agree (%)")
    return [Heading("By object"),
            Paragraph("Sim-vs-real errors of each object's trials (means over the complete trials of the object; "
                      "a fit over several objects should be judged object by object)."),
            Table(header, tuple(tuple(r) for r in rows), "Sim-vs-real errors per object", css_class="objects")]
