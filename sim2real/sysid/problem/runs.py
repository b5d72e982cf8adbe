"""Many trials at once: reading them tolerantly and naming the ones that could not be used.

``fit`` and ``replay`` over a run directory keep every trial that works and name every one
that does not (:class:`TrialFailure`, one line each). Only input that names nothing usable
at all — a path that does not exist, a directory without trials, or trials that all fail —
is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim2real.errors import InputError, Sim2RealError
from sim2real.trials import TrialRecord, read_trial, trial_dirs


@dataclass(frozen=True)
class TrialFailure:
    """A trial left out, and why.

    Attributes
    ----------
    name : str
        Trial name (its directory name when it could not be read).
    reason : str
        One line.
    source : str or None
        Where it came from (path).
    stage : str
        ``"read"``, ``"inputs"`` (its topics do not serve the mode), ``"start"`` (its
        simulation failed at the start values), ``"replay"`` or ``"validation"``.
    option : str or None
        The error's :attr:`~sim2real.errors.Sim2RealError.option` (the option that sets what failed).
    """

    name: str
    reason: str
    source: str | None = None
    stage: str = ""
    option: str | None = None

    def line(self) -> str:
        """``name: reason`` (without repeating the name when the reason already gives it)."""
        return self.reason if f"'{self.name}'" in self.reason else f"{self.name}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (fit.json ``failures``, run.json ``failed``)."""
        return {"trial": self.name, "source": self.source, "stage": self.stage, "reason": self.reason}


@dataclass(frozen=True)
class LoadedTrials:
    """Trials read from paths, their sources, and the ones that could not be read."""

    records: tuple[TrialRecord, ...]
    sources: tuple[str, ...]
    failures: tuple[TrialFailure, ...]


def _trial_paths(raw: str | Path) -> list[Path]:
    path = Path(raw)
    if not path.exists():
        raise InputError(f"bag {path} does not exist")
    if path.is_dir() and not (path / "metadata.yaml").exists():
        dirs = trial_dirs(path)
        if not dirs:
            raise InputError(f"{path} is neither a trial (no metadata.yaml) nor a run directory with trials")
        return dirs
    return [path]


def read_trials(paths: Sequence[str | Path]) -> LoadedTrials:
    """Read every trial named by ``paths`` (trial or run directories), keeping the readable ones.

    Raises
    ------
    Sim2RealError
        A path does not exist or holds no trial (bad input), or no trial could be read at all
        (the message gives every reason).
    """
    records: list[TrialRecord] = []
    sources: list[str] = []
    failures: list[TrialFailure] = []
    for raw in paths:
        for trial in _trial_paths(raw):
            try:
                records.append(read_trial(trial))
                sources.append(str(trial))
            except Sim2RealError as err:
                failures.append(TrialFailure(trial.name, " ".join(str(err).split()), str(trial), "read", err.option))
    if not records:
        raise_all_failed(failures, "no trial could be read")
    return LoadedTrials(tuple(records), tuple(sources), tuple(failures))


def raise_all_failed(failures: Sequence[TrialFailure], what: str) -> None:
    """Raise one :class:`Sim2RealError` for a run where every trial failed.

    One failure: its own message. Several: ``what`` followed by every ``name: reason``. The error's
    ``option`` is the failures' when they all have the same one.
    """
    options = {f.option for f in failures}
    option = options.pop() if len(options) == 1 else None
    if len(failures) == 1:
        raise InputError(failures[0].line(), option=option)
    raise InputError(f"{what}: " + "; ".join(f.line() for f in failures), option=option)


def check_unique_names(records: Sequence[TrialRecord]) -> None:
    """Trials written into one run directory need distinct names.

    Raises
    ------
    Sim2RealError
        Naming the duplicated name.
    """
    seen: set[str] = set()
    for record in records:
        if record.name in seen:
            raise InputError(f"two trials are named '{record.name}'; replay them into separate output directories")
        seen.add(record.name)


def split_holdout(loaded: LoadedTrials, fraction: float, seed: int) -> tuple[LoadedTrials, LoadedTrials]:
    """Split trials into fitted and held-out ones, by whole trials, reproducibly.

    Parameters
    ----------
    loaded : LoadedTrials
        All readable trials (its read failures stay with the fitted part).
    fraction : float
        Share of the trials held out, in (0, 1); rounded to the nearest count.
    seed : int
        Seed of the random choice (the same seed and trials give the same split).

    Returns
    -------
    (LoadedTrials, LoadedTrials)
        The trials to fit and the held-out ones, each in their original order.

    Raises
    ------
    Sim2RealError
        The fraction is outside (0, 1), or leaves no trial on one side.
    """
    import numpy as np

    if not 0.0 < fraction < 1.0:
        raise InputError(f"the held-out fraction must be between 0 and 1 (exclusive), got {fraction:g}",
                         option="holdout")
    count = len(loaded.records)
    held = round(fraction * count)
    if held < 1 or held > count - 1:
        raise InputError(f"a held-out fraction {fraction:g} of {count} trial(s) holds out {held}: need at least one "
                         "trial on each side (give more trials or another fraction)", option="holdout")
    chosen = set(np.random.default_rng(seed).choice(count, size=held, replace=False).tolist())
    fit_idx = [k for k in range(count) if k not in chosen]
    held_idx = sorted(chosen)

    def part(indices: list[int], failures: tuple[TrialFailure, ...]) -> LoadedTrials:
        return LoadedTrials(tuple(loaded.records[k] for k in indices), tuple(loaded.sources[k] for k in indices),
                            failures)
    return part(fit_idx, loaded.failures), part(held_idx, ())


def hold_out(loaded: LoadedTrials, validation: LoadedTrials | None, fraction: float | None,
             seed: int) -> tuple[LoadedTrials, LoadedTrials | None, LoadedTrials | None]:
    """The training trials and the held-out ones: ``validation`` plus, with ``fraction``, a seeded share
    of ``loaded`` (:func:`split_holdout`).

    Returns
    -------
    (LoadedTrials, LoadedTrials or None, LoadedTrials or None)
        Training trials; every held-out trial (None when there are none); the ones split off ``loaded``
        (None without ``fraction``).
    """
    if fraction is None:
        return loaded, validation, None
    training, split = split_holdout(loaded, fraction, seed)
    held = split if validation is None else LoadedTrials(validation.records + split.records,
                                                         validation.sources + split.sources, validation.failures)
    return training, held, split
