"""Sim-vs-real reports: the experiment table (per trial: final position error in the table plane and
in 3-D, yaw error, path RMS, flips; for the standard push along x also Dojo's Table IV distances),
per-trial figures, fit results.

``build_report(run_dirs, out_dir, fit=None, labels=None, truth=None, before=None, after=None) -> ReportPaths``
(``fit``: one fit.json or several, one subsection each; ``truth``: known true values for the parameter
tables; runs compare as before and after only where they pair, :mod:`sim2real.report.pairing`) writes
``report.html`` (self-contained: figures embedded as base64 PNG, no external URLs) and
``report.md`` (figures as PNG files next to it). Pure Python with matplotlib (Agg); no ROS.
"""

from sim2real.report.build import ReportPaths, build_report
from sim2real.report.fit_tables import FitSummary, read_fit
from sim2real.report.tables import ExperimentRow, ExperimentTable, experiment_table

__all__ = ["ExperimentRow", "ExperimentTable", "FitSummary", "ReportPaths", "build_report", "experiment_table",
           "read_fit"]
