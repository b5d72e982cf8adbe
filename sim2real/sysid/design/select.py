"""Choosing the pushes: the linearised forecast of the intervals a refit would report, and a greedy-then-exchange
search.

What a refit on the earlier and the new trials reports, forecast at the current values: with ``H₀`` the earlier
trials' information (``G₀`` trials; from the fit's reported covariance, zero in directions it did not determine),
``H_k`` that of each new push (:mod:`sim2real.sysid.design.information`, divided by the row variance ``σ²`` of
:mod:`sim2real.sysid.design.prior`) and ``R`` a weak regulariser (uniform over the bounds; it keeps the forecast
finite where the pushes inform nothing, and is not a trial), the covariance is ``C = (R + H₀ + Σ_k H_k)⁻¹``. The
fit's intervals are Student's t with ``ν_j = max(1, min(G, G_j) − 1)`` degrees of freedom, ``G_j`` the effective
number of trials that inform parameter ``j`` (:func:`sim2real.sysid.uncertainty.covariance.effective_dof`: each
earlier trial takes ``H₀ / G₀``, each new push its ``H_k``), so the forecast half-width is ``t_{0.975}(ν_j) √C_jj``:
a parameter that one push alone determines gets the quantile of one trial (12.7), as the refit will give it. It is
a forecast: the real pushes land elsewhere, a push near a threshold (tipping, the turn's direction) is far from
linear, and the noise of a new trial is the fit's, assumed.

The information of a push depends on the values it is linearised at, which before the pushes are uncertain
(after a fit that did not determine a parameter, its value is arbitrary: a bound, a start). So it is evaluated at
K points (the current values, and K − 1 draws from the prior: normal for determined unknowns, uniform within the
bounds for undetermined ones) and the criterion is averaged over them (pseudo-Bayesian design); the forecast is
the mean over the K points.

The criterion is over the target unknowns ``T`` (every unknown by default), in coordinates scaled by the prior's
standard deviations so that units do not weigh: **W** (default) minimises the mean of ``log`` half-width over
``T`` (the geometric mean of the intervals the refit reports, with their degrees of freedom), **D** minimises
``log det C_TT`` (Dₛ-optimality: the volume of the targets' joint confidence region), **A** minimises
``Σ_{j∈T} C_jj`` (the mean variance). The search is greedy (each push in turn the best given those before; a push
may be chosen again, which repeats it), then an exchange pass (Fedorov): each chosen push is swapped for the best
candidate given the others while that improves the criterion.

What the search buys is forecast the same way: :func:`random_half_widths` forecasts many sets of as many pushes
drawn at random from the same feasible candidates (what a lab would get by pushing anywhere the arm can), so that
the designed forecast can be read against pushes chosen without design, not only against the standard sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from sim2real.errors import InputError
from sim2real.sysid.uncertainty import effective_dof

#: Criteria by name (``--criterion``).
CRITERIA = ("W", "D", "A")
#: Exchange passes at most.
MAX_EXCHANGE_PASSES = 5


@dataclass(frozen=True)
class Known:
    """What is known before the pushes, in scaled coordinates (every matrix (p, p)).

    Attributes
    ----------
    regulariser : ndarray
        ``R``: weak information that keeps the forecast finite (not a trial).
    earlier : ndarray
        ``H₀``: the earlier trials' information (zero without a fit).
    earlier_trials : int
        ``G₀``: how many trials ``H₀`` comes from (0 without a fit).
    """

    regulariser: np.ndarray
    earlier: np.ndarray
    earlier_trials: int


@dataclass(frozen=True)
class Outlook:
    """A forecast of the refit's intervals, scaled coordinates.

    Attributes
    ----------
    covariance : ndarray, shape (p, p)
    half_width : ndarray, shape (p,)
        Forecast 95 % half-widths, ``t_{0.975}(ν) √C_jj`` (the normal quantile without any trial).
    dof : ndarray, shape (p,)
        ``ν`` per unknown (inf: no trial, the normal quantile).
    """

    covariance: np.ndarray
    half_width: np.ndarray
    dof: np.ndarray


def outlook(known: Known, pushes: Sequence[np.ndarray]) -> Outlook:
    """The forecast after ``pushes`` (each a scaled ``H_k``)."""
    total = known.regulariser + known.earlier + (np.sum(pushes, axis=0) if len(pushes) else 0.0)
    covariance = np.linalg.inv((total + total.T) / 2.0)
    earlier = [known.earlier / known.earlier_trials] * known.earlier_trials if known.earlier_trials else []
    blocks = earlier + list(pushes)
    if blocks:
        dof = effective_dof(np.array(blocks), covariance)
        quantile = stats.t.ppf(0.975, dof)
    else:
        dof = np.full(total.shape[0], np.inf)
        quantile = np.full(total.shape[0], stats.norm.ppf(0.975))
    return Outlook(covariance, quantile * np.sqrt(np.clip(np.diag(covariance), 0.0, None)), dof)


def criterion_value(view: Outlook, targets: np.ndarray, criterion: str) -> float:
    """The criterion of a forecast (lower is better)."""
    if criterion == "W":
        return float(np.mean(np.log(view.half_width[targets])))
    block = view.covariance[np.ix_(targets, targets)]
    if criterion == "D":
        sign, logdet = np.linalg.slogdet(block)
        return float(logdet) if sign > 0 else float("inf")
    return float(np.trace(block))


@dataclass(frozen=True)
class Selection:
    """The chosen pushes and the forecast after each.

    Attributes
    ----------
    chosen : tuple of int
        Candidate indices, in run order (a repeated index repeats a push).
    half_widths : tuple of ndarray
        Forecast 95 % half-widths (p,), scaled, after 0, 1, ..., N of the chosen pushes (mean over the points).
    criterion : str
    exchanges : int
        Swaps the exchange pass made.
    """

    chosen: tuple[int, ...]
    half_widths: tuple[np.ndarray, ...]
    criterion: str
    exchanges: int


def mean_half_width(known: Known, informations: Sequence[Sequence[np.ndarray]], chosen: Sequence[int]) -> np.ndarray:
    """The forecast half-widths (p,) after the ``chosen`` candidates, the mean over the points."""
    return np.mean([outlook(known, [point[k] for k in chosen]).half_width for point in informations], axis=0)


def select_pushes(known: Known, informations: Sequence[Sequence[np.ndarray]], count: int, targets: np.ndarray,
                  criterion: str = "W") -> Selection:
    """The ``count`` pushes that minimise the criterion averaged over the linearisation points (greedy, then
    exchange).

    Parameters
    ----------
    known : Known
    informations : sequence (K points) of sequence (M candidates) of ndarray, shape (p, p)
        Each feasible candidate's ``H / σ²`` in scaled coordinates at each point.
    count : int
        Pushes to choose (at least 1).
    targets : ndarray of int
        The unknowns the criterion is over.
    criterion : str
        ``"W"``, ``"D"`` or ``"A"``.

    Raises
    ------
    InputError
        No candidate, a count below 1 or an unknown criterion.
    """
    if criterion not in CRITERIA:
        raise InputError(f"unknown criterion '{criterion}' (expected one of {', '.join(CRITERIA)})")
    if count < 1:
        raise InputError(f"the number of pushes must be at least 1, got {count}")
    if not informations or not informations[0]:
        raise InputError("no feasible candidate push to choose from")
    candidates = range(len(informations[0]))

    def score(chosen: Sequence[int]) -> float:
        return float(np.mean([criterion_value(outlook(known, [point[k] for k in chosen]), targets, criterion)
                              for point in informations]))

    chosen: list[int] = []
    for _ in range(count):
        chosen.append(min(candidates, key=lambda k: score([*chosen, k])))
    exchanges = 0
    for _ in range(MAX_EXCHANGE_PASSES):
        improved = False
        for slot in range(count):
            best = score(chosen)
            others = chosen[:slot] + chosen[slot + 1:]
            pick = min(candidates, key=lambda k: score([*others, k]))
            if score([*others, pick]) < best - 1e-9 * max(1.0, abs(best)):
                chosen[slot] = pick
                exchanges += 1
                improved = True
        if not improved:
            break
    return Selection(tuple(chosen), tuple(mean_half_width(known, informations, chosen[:n]) for n in range(count + 1)),
                     criterion, exchanges)


#: Random sets :func:`random_half_widths` forecasts by default.
RANDOM_SETS = 200


def random_half_widths(known: Known, informations: Sequence[Sequence[np.ndarray]], count: int,
                       rng: np.random.Generator, sets: int = RANDOM_SETS) -> np.ndarray:
    """Forecast half-widths after ``count`` pushes drawn at random from the feasible candidates, per set.

    Each set holds ``count`` distinct candidates (drawn with replacement only when fewer are feasible), drawn
    uniformly; its half-widths are the mean over the points, as for the designed set (:func:`mean_half_width`).

    Parameters
    ----------
    known : Known
    informations : sequence (K points) of sequence (M candidates) of ndarray, shape (p, p)
        As for :func:`select_pushes`.
    count : int
        Pushes per set (at least 1).
    rng : numpy.random.Generator
        Draws the sets.
    sets : int
        How many sets.

    Returns
    -------
    ndarray, shape (sets, p)
        Scaled half-widths of each set.
    """
    if count < 1 or sets < 1 or not informations or not informations[0]:
        raise InputError("random sets need at least one push, one set and one feasible candidate")
    pool = len(informations[0])
    return np.array([mean_half_width(known, informations,
                                     [int(k) for k in rng.choice(pool, size=count, replace=pool < count)])
                     for _ in range(sets)])
