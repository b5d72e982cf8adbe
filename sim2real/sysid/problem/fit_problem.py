"""What a fit fits: :class:`FitProblem`, the trials, the unknowns and how residuals are formed.

:func:`~sim2real.sysid.solve.fit.fit_trials` solves a problem; how it runs (optimizer settings, executor,
other starts, the jackknife, progress) are that function's arguments, not part of the problem. The
trial jackknife refits ``problem.without(trial)`` for each fitted trial.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sim2real.errors import InputError
from sim2real.params import ParameterSet
from sim2real.sysid.problem.free import FreeParameters
from sim2real.sysid.problem.runs import TrialFailure
from sim2real.sysid.residuals import ResidualSpec
from sim2real.trials import TrialRecord


@dataclass(frozen=True)
class FitProblem:
    """A fit's question: which values of the free parameters make the simulator match these trials.

    Attributes
    ----------
    records : sequence of TrialRecord
        Trials to fit (arm pushes, pusher recordings and/or box-only recordings such as cube tosses).
    start : ParameterSet
        Start values; parameters not free stay at these values.
    free : sequence of str, str or FreeParameters
        Names to fit; ``a=b`` ties names into one unknown (:mod:`sim2real.sysid.problem.free`).
    spec : ResidualSpec
        How a trial is compared with the simulator: horizon (steps per teacher-forced segment, or
        None for whole trials), weights, mode, pusher source and shape, engine, strictness.
    bounds : mapping, optional
        ``{name: (lower, upper)}`` narrowing the registry bounds of free names (SI units).
    platform : str
        Recording compared against: ``"real"``, ``"sim"`` or ``"auto"``.
    sources : sequence of str, optional
        Where each record came from (paths), one per record; recorded in fit.json ``data``.
    validation : sequence of TrialRecord
        Held-out trials: their cost is tracked along the fit, and a rise is a problem.
    validation_sources : sequence of str, optional
        Where each held-out record came from.
    failures : sequence of TrialFailure
        Trials the caller could not read; carried into the result.
    per_object : tuple of str
        Registry names (free) fitted with one value per object (the trials' object labels,
        :mod:`sim2real.sysid.problem.objects`); the others are shared by every trial. Held-out trials of an
        object without its own values are left out (named).
    """

    records: Sequence[TrialRecord]
    start: ParameterSet
    free: Sequence[str] | str | FreeParameters
    spec: ResidualSpec = field(default_factory=ResidualSpec)
    bounds: Mapping[str, tuple[float, float]] | None = None
    platform: str = "auto"
    sources: Sequence[str] | None = None
    validation: Sequence[TrialRecord] = ()
    validation_sources: Sequence[str] | None = None
    failures: Sequence[TrialFailure] = ()
    per_object: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.per_object, str):  # a name list is a tuple; one string would be read letter by letter
            raise InputError(f"per_object must be a tuple of names, got the string {self.per_object!r}")
        for records, sources, what in ((self.records, self.sources, "sources"),
                                       (self.validation, self.validation_sources, "validation_sources")):
            if sources is not None and len(sources) != len(records):
                raise InputError(f"{what}: {len(sources)} path(s) for {len(records)} trial(s)")

    @property
    def free_set(self) -> FreeParameters:
        """The free names and tied groups, parsed."""
        return self.free if isinstance(self.free, FreeParameters) else FreeParameters.parse(self.free)

    def without(self, trial: str | int) -> FitProblem:
        """The same problem without one fitted trial (and its source).

        ``trial`` is its name, or its position in :attr:`records` (trials of different runs may share a
        name; a name that is not unique is an error).
        """
        if isinstance(trial, str):
            matches = [k for k, record in enumerate(self.records) if record.name == trial]
            if len(matches) != 1:
                raise InputError(f"no trial '{trial}' in this fit" if not matches else
                                 f"{len(matches)} trials are named '{trial}': leave one out by its position")
            trial = matches[0]
        if not 0 <= trial < len(self.records):
            raise InputError(f"no trial {trial} in this fit of {len(self.records)}")
        return self._keeping([k for k in range(len(self.records)) if k != trial])

    def only(self, names: Sequence[str]) -> FitProblem:
        """The same problem on the fitted trials ``names`` only (in the records' order)."""
        wanted = set(names)
        return self._keeping([k for k, record in enumerate(self.records) if record.name in wanted])

    def _keeping(self, keep: Sequence[int]) -> FitProblem:
        """The same problem on the fitted trials at positions ``keep`` (with their sources)."""
        sources = None if self.sources is None else [self.sources[k] for k in keep]
        return dataclasses.replace(self, records=[self.records[k] for k in keep], sources=sources)
