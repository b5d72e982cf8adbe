"""Which runs of a report compare as *before* and *after*: by label or by what the runs record, never by
their order on the command line.

A report of several runs says "the error went from X ('before') to Y ('after')" only where that
comparison means something: the same recorded trials, simulated twice. :func:`pair_runs` pairs
runs, in this order of precedence:

1. **explicitly**: ``before`` and ``after`` name two run labels (``report --before A --after B``);
2. **by label**: exactly one run label begins with the word "before" and exactly one with "after"
   (``--labels before,after``; the demo's "before fit (nominal)" and "after fit");
3. **by what the runs record**: run B re-simulates the recordings of run A when every trial of B
   names a trial of A as its source (trial.json ``replay_of``, written by ``sim2real replay`` and the
   demo) and B's recorded (real) box poses are A's, sample for sample; then A is *before* and B
   *after*. Two runs that both re-simulate the same recordings are ordered by a fit given to the
   report: the one simulated with the fit's start values (trial.json ``params``) is *before*, the one
   with its fitted values *after*.

Runs that none of these pairs are shown side by side, without a before/after claim, and the report
says why (e.g. three runs of three different blocks).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.trials import PLATFORMS, PoseSeries, TrialRecord

_WORD = re.compile(r"^\s*(before|after)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Pair:
    """Two runs compared as before and after.

    Attributes
    ----------
    before, after : int
        Indices of the runs (in the order given).
    reason : str
        Why they pair, in words (for the report).
    """

    before: int
    after: int
    reason: str


@dataclass(frozen=True)
class Pairing:
    """The before/after pairs of a report's runs and what could not be paired.

    Attributes
    ----------
    pairs : tuple of Pair
    unpaired : tuple of int
        Runs in no pair (shown side by side only), when there are two or more runs.
    why : str
        Why the unpaired runs carry no before/after claim (empty when every run is paired or there is
        a single run).
    """

    pairs: tuple[Pair, ...]
    unpaired: tuple[int, ...]
    why: str = ""

    def before_of(self, index: int) -> int | None:
        """The run compared as *before* with run ``index`` (when ``index`` is an *after*), else None."""
        return next((pair.before for pair in self.pairs if pair.after == index), None)


def _box_pose(trial: TrialRecord, ns: str) -> PoseSeries | None:
    platform = trial.platforms.get(ns)
    return None if platform is None else platform.box_pose


def same_recording(a: PoseSeries | None, b: PoseSeries | None) -> bool:
    """Whether two box pose series are one recording: the same sample times and positions (1e-9)."""
    if a is None or b is None or len(a) == 0 or len(a) != len(b):
        return False
    return bool(np.allclose(a.t, b.t, rtol=0.0, atol=1e-9)
                and np.allclose(a.position, b.position, rtol=0.0, atol=1e-9))


def _sources(trials: Sequence[TrialRecord]) -> list[str] | None:
    """Each trial's ``replay_of`` (None when a trial does not name its source)."""
    names = [trial.info.replay_of for trial in trials]
    return [str(n) for n in names] if trials and all(isinstance(n, str) and n for n in names) else None


def replays(after: Sequence[TrialRecord], before: Sequence[TrialRecord]) -> bool:
    """Whether every trial of ``after`` re-simulates a trial of ``before``: it names that trial as its
    source (``replay_of``) and its recorded (real) box poses are that trial's recorded ones."""
    sources = _sources(after)
    if sources is None:
        return False
    by_name = {trial.name: trial for trial in before}
    for trial, source in zip(after, sources, strict=True):
        original = by_name.get(source)
        if original is None:
            return False
        recorded = _box_pose(trial, "real")
        if not any(same_recording(recorded, _box_pose(original, ns)) for ns in PLATFORMS):
            return False
    return True


def _same_recordings(a: Sequence[TrialRecord], b: Sequence[TrialRecord]) -> bool:
    """Whether two runs of replays re-simulate the same recordings (same sources, same real box poses)."""
    sources_a, sources_b = _sources(a), _sources(b)
    if sources_a is None or sources_b is None or sorted(sources_a) != sorted(sources_b):
        return False
    by_source = dict(zip(sources_b, b, strict=True))
    return all(same_recording(_box_pose(trial, "real"), _box_pose(by_source[source], "real"))
               for trial, source in zip(a, sources_a, strict=True))


def _simulated_with(trials: Sequence[TrialRecord], values: Mapping[str, float]) -> bool:
    """Whether every trial's simulator parameters (trial.json ``params``) hold ``values`` (rel. 1e-6)."""
    if not values or not trials:
        return False
    for trial in trials:
        params = trial.info.params
        for name, value in values.items():
            recorded = params.get(name)
            if not isinstance(recorded, (int, float)) or not np.isclose(float(recorded), float(value), rtol=1e-6,
                                                                        atol=1e-12):
                return False
    return True


def _explicit(labels: Sequence[str], before: str | None, after: str | None) -> Pair | None:
    if before is None and after is None:
        return None
    if before is None or after is None:
        raise Sim2RealError("give both the run before and the run after (the labels of the two runs to compare)",
                            option="before" if before is None else "after")
    for option, label in (("before", before), ("after", after)):
        if label not in labels:
            raise Sim2RealError(f"the run {option} '{label}' is not the label of a run (labels: {', '.join(labels)})",
                                option=option)
    if before == after:
        raise Sim2RealError(f"the runs before and after are the same run '{before}'", option="after")
    return Pair(labels.index(before), labels.index(after), "named with --before and --after")


def _by_label(labels: Sequence[str]) -> Pair | None:
    words = [(match.group(1).lower() if (match := _WORD.match(label)) else None) for label in labels]
    if words.count("before") == 1 and words.count("after") == 1:
        return Pair(words.index("before"), words.index("after"), "by their labels")
    return None


def pair_runs(labels: Sequence[str], runs: Sequence[Sequence[TrialRecord]], fits: Sequence[Any] = (),
              before: str | None = None, after: str | None = None) -> Pairing:
    """Pair the runs of a report as before and after (module docstring); never by their order.

    Parameters
    ----------
    labels : sequence of str
        One distinct label per run.
    runs : sequence of sequence of TrialRecord
        The trials of each run.
    fits : sequence of FitSummary
        Fits given to the report (their ``values`` and ``start_values`` order two re-simulations).
    before, after : str, optional
        Labels of the runs to compare, given explicitly (both or neither).

    Raises
    ------
    Sim2RealError
        Only one of ``before``/``after``, a label that is no run's, or the same run twice.
    """
    count = len(runs)
    explicit = _explicit(labels, before, after)
    pairs: list[Pair] = []
    if explicit is not None:
        pairs = [explicit]
    elif count >= 2 and (labelled := _by_label(labels)) is not None:
        pairs = [labelled]
    elif count >= 2:
        pairs = _by_records(labels, runs, fits)
    paired = {k for pair in pairs for k in (pair.before, pair.after)}
    unpaired = tuple(k for k in range(count) if k not in paired) if count >= 2 else ()
    why = ""
    if unpaired:
        names = ", ".join(f"'{labels[k]}'" for k in unpaired)
        if explicit is not None:
            why = f"Only the runs named with --before and --after are compared; {names} are shown beside them."
        else:
            why = (f"Run(s) {names} are shown side by side without a before/after comparison: no other run "
                   "re-simulates the same recordings (trial.json replay_of and identical recorded box poses), "
                   "and their labels do not say before or after (give --before LABEL --after LABEL to compare "
                   "two runs).")
    return Pairing(tuple(pairs), unpaired, why)


def _by_records(labels: Sequence[str], runs: Sequence[Sequence[TrialRecord]], fits: Sequence[Any]) -> list[Pair]:
    """Pairs from what the runs record: re-simulations of another run's recordings (module docstring)."""
    pairs: list[Pair] = []
    for b, trials_b in enumerate(runs):
        for a, trials_a in enumerate(runs):
            if a != b and replays(trials_b, trials_a) and not replays(trials_a, trials_b):
                pairs.append(Pair(a, b, f"'{labels[b]}' re-simulates the recordings of '{labels[a]}' (trial.json "
                                        "replay_of; the same recorded box poses)"))
    for a in range(len(runs)):
        for b in range(a + 1, len(runs)):
            if any({p.before, p.after} == {a, b} for p in pairs) or not _same_recordings(runs[a], runs[b]):
                continue
            for fit in fits:
                start, fitted = dict(fit.start_values or {}), dict(fit.values or {})
                for first, second in ((a, b), (b, a)):
                    if _simulated_with(runs[first], start) and _simulated_with(runs[second], fitted) \
                            and not _simulated_with(runs[first], fitted):
                        pairs.append(Pair(first, second, f"both re-simulate the same recordings; '{labels[first]}' "
                                                         f"with the start values and '{labels[second]}' with the "
                                                         f"fitted values of fit {fit.path}"))
                        break
                else:
                    continue
                break
    return pairs
