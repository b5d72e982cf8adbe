"""Engines side by side: fit each engine on the same training trials, compare their predictions of the
same held-out trials (:func:`compare_engines`); ``sim2real compare-engines`` shows them as one table and
one figure.

Every engine gets its own start parameters and free parameters (a parameter one engine has may mean
nothing to the other: ``contact.support_ratio`` is ours, ``mujoco.*`` are MuJoCo's); the trials, the
horizon, the pusher and the held-out trials are the same for all. The figures compared are those
``fit --validate`` reports: on held-out trials, simulated whole from their recorded start, the mean
final position error (m), the mean yaw error (deg), the flip agreement, and the RMS position error
over the fit's horizon (with ``--horizon trial``: the trajectory error); and each fit's wall time.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sim2real.params import ParameterSet
from sim2real.sysid.problem import FitProblem, FreeParameters
from sim2real.sysid.residuals import ResidualSpec
from sim2real.sysid.solve import FitResult, LMSettings, fit_trials
from sim2real.trials import TrialRecord


@dataclass(frozen=True)
class EngineFit:
    """One engine's fit and its held-out figures.

    Attributes
    ----------
    engine : str
    result : FitResult
    wall_s : float
        Wall time of the fit, s (including the predictions of training and held-out trials).
    """

    engine: str
    result: FitResult
    wall_s: float

    def held_out(self, when: str = "final") -> dict[str, Any]:
        """Held-out prediction figures at the ``"start"`` or ``"final"`` values (empty if none)."""
        prediction = (self.result.validation or {}).get("prediction") or {}
        block = prediction.get("validation") or {}
        figures = dict(block.get(when) or {})
        rms = (block.get("horizon_rms") or {}).get(when) or {}
        figures["trajectory_rms_m"] = rms.get("position_m")
        return figures

    def row(self) -> dict[str, Any]:
        """The engine's line of the comparison (JSON-ready)."""
        return {"engine": self.engine, "status": self.result.status, "problems": list(self.result.problems),
                "values": self.result.values, "std": self.result.std, "fit_wall_s": self.wall_s,
                "iterations": self.result.trace[-1]["iteration"] if self.result.trace else 0,
                "held_out_start": self.held_out("start"), "held_out_final": self.held_out("final")}


def compare_engines(records: Sequence[TrialRecord], held_out: Sequence[TrialRecord],
                    starts: Mapping[str, ParameterSet], free: Mapping[str, str | FreeParameters],
                    spec: ResidualSpec | None = None, settings: LMSettings | None = None,
                    log: Callable[[str], None] | None = None) -> list[EngineFit]:
    """Fit every engine of ``starts`` on ``records`` and predict ``held_out`` with each.

    Parameters
    ----------
    records, held_out : sequence of TrialRecord
        Training and held-out trials (the same for every engine; ``held_out`` must not be empty).
    starts : mapping of str to ParameterSet
        Start parameters per engine name (``"ours"``, ``"mujoco"``); the order is the table's.
    free : mapping of str to str or FreeParameters
        Free parameters per engine.
    spec : ResidualSpec, optional
        How trials are compared with the simulator (horizon, mode, pusher shape, weights, ...), the
        same for every engine but the engine itself (default :class:`ResidualSpec`).
    settings : LMSettings, optional
        Optimizer settings of every fit.
    log : callable, optional
        Progress lines (each fit's own lines, prefixed with the engine).

    Returns
    -------
    list of EngineFit
    """
    fits = []
    for engine, start in starts.items():
        prefixed = (lambda text, e=engine: log(f"[{e}] {text}")) if log is not None else None
        clock = time.perf_counter()
        problem = FitProblem(records, start, free[engine], spec=dataclasses.replace(spec or ResidualSpec(),
                                                                                   engine=engine),
                             validation=held_out)
        result = fit_trials(problem, settings, log=prefixed)
        fits.append(EngineFit(engine, result, time.perf_counter() - clock))
    return fits
