"""The optimizer's step control: the line search along a creeping Gauss-Newton step, and what it never does."""

from __future__ import annotations

import numpy as np

from sim2real.sysid.solve.damped_step import BOUND_MARGIN
from sim2real.sysid.solve.optimizer import MAX_EXTENSIONS, LMSettings, TraceEntry, _extended_step, levenberg_marquardt
from sim2real.sysid.solve.stopping import STALL_FRACTION, STALL_WINDOW, stalled


def _quadratic(minimum: float, calls: list[float]):
    """``x (1,) -> (r (1,), J (1, 1))`` of the cost ½ (x - minimum)², recording each x it is asked for."""
    def evaluate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        calls.append(float(x[0]))
        return np.array([x[0] - minimum]), np.ones((1, 1))
    return evaluate


def test_a_short_step_is_doubled_while_the_cost_falls() -> None:
    calls: list[float] = []
    best, spent = _extended_step(_quadratic(4.0, calls), np.zeros(1), np.ones(1), np.array([-10.0]),
                                 np.array([10.0]), 0.5 * 3.0 ** 2, LMSettings())
    assert best is not None and best[0][0] == 4.0 and best[3] == 0.0
    assert spent == MAX_EXTENSIONS == 2 and calls == [2.0, 4.0]


def test_a_doubling_that_raises_the_cost_is_not_taken() -> None:
    calls: list[float] = []
    best, spent = _extended_step(_quadratic(1.2, calls), np.zeros(1), np.ones(1), np.array([-10.0]),
                                 np.array([10.0]), 0.5 * 0.2 ** 2, LMSettings())
    assert best is None and spent == 1 and calls == [2.0]


def test_a_doubling_stops_at_a_bound() -> None:
    calls: list[float] = []
    best, spent = _extended_step(_quadratic(9.0, calls), np.zeros(1), np.ones(1), np.array([-10.0]),
                                 np.array([1.5]), 0.5 * 8.0 ** 2, LMSettings())
    # the first doubling is clipped a margin short of the bound (BOUND_MARGIN of the range) and still lowers
    # the cost; the next doubling is clipped to the same point and not evaluated again
    assert best is not None and best[0][0] == 1.5 - BOUND_MARGIN * 11.5 and spent == 1 and len(calls) == 1


def test_a_well_modelled_fit_never_extends() -> None:
    """On a linear least-squares problem the Gauss-Newton model is exact (gain ratio 1): no extra evaluations."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((20, 3))
    b = rng.standard_normal(20)
    calls: list[float] = []

    def evaluate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        calls.append(float(x[0]))
        return A @ x - b, A

    result = levenberg_marquardt(evaluate, np.zeros(3), np.full(3, -1e3), np.full(3, 1e3), LMSettings())
    np.testing.assert_allclose(result.x, np.linalg.lstsq(A, b, rcond=None)[0], rtol=1e-6, atol=1e-9)
    assert len(calls) == len(result.trace)  # the start, then one evaluation per iteration


def _trace(costs: list[float], xs: list[float], accepted: list[bool]) -> list[TraceEntry]:
    return [TraceEntry(k, cost, 0.0, 0.0, ok, 0.0, 0.0, (x,), 0.0) for k, (cost, x, ok) in
            enumerate(zip(costs, xs, accepted, strict=True))]


FREE = np.ones(1, dtype=bool)


def test_a_zigzag_within_a_quarter_standard_deviation_stalls_but_a_crawl_or_a_falling_cost_does_not() -> None:
    assert STALL_WINDOW == 4
    one = np.array([1.0])
    # Steps of 0.3 standard deviations back and forth, the cost down by 0.05 %: stalled.
    zigzag = _trace([100.0, 99.99, 99.99, 99.97, 99.95], [0.0, 0.3, 0.3, 0.0, 0.2], [True, True, False, True, True])
    assert stalled(zigzag, FREE, one)
    # The same net move judged against a smaller standard deviation: 0.2 > a quarter of 0.5.
    assert not stalled(zigzag, FREE, 0.5 * one)
    # A crawl in one direction that adds up to a quarter of a standard deviation or more: not stalled.
    crawl = _trace([100.0, 99.99, 99.98, 99.97, 99.96], [0.0, 0.07, 0.14, 0.21, 0.28], [True] * 5)
    assert STALL_FRACTION <= 0.28 and not stalled(crawl, FREE, one)
    # The cost fell by more than 0.1 % over the window: progress, whatever the values did.
    falling = _trace([100.0, 99.9, 99.9, 99.8, 99.7], [0.0, 0.1, 0.1, 0.0, 0.1], [True, True, False, True, True])
    assert not stalled(falling, FREE, one)
    # Rejections alone are the damping's business (one accepted step in the window).
    rejected = _trace([100.0, 99.99, 99.99, 99.99, 99.99], [0.0, 0.1, 0.1, 0.1, 0.1], [True, True, False, False, False])
    assert not stalled(rejected, FREE, one)
    # Standard deviations unknown (the statistical tests not yet armed) or too short a trace: no verdict.
    assert not stalled(zigzag, FREE, None)
    assert not stalled(zigzag[:4], FREE, one)


def _creeping_step(negligible: bool, decrease: float) -> tuple[int, float]:
    """Accept a step from x = 0 to 1 on ½ (x - 4)² after a step that also beat its prediction (both gain
    ratios above EXTEND_RATIO); returns the evaluations the acceptance spent and where it left x."""
    from sim2real.sysid.solve.optimizer import EXTEND_RATIO, _accept, _LMProblem, _LMState, _Proposal

    calls: list[float] = []
    evaluate = _quadratic(4.0, calls)
    old = 0.5 * 4.0 ** 2
    problem = _LMProblem(evaluate, np.array([-10.0]), np.array([10.0]), np.ones(1), LMSettings(), None, None, None,
                         0.0)
    state = _LMState(np.zeros(1), np.array([-4.0]), np.ones((1, 1)), old, np.ones(1), np.array([-4.0]),
                     np.array([-4.0]), FREE.copy(), np.ones(1), 1.0, 1e-3, last_ratio=2 * EXTEND_RATIO)
    proposal = _Proposal(np.ones(1), np.ones(1), 1.0, 0.5 * old / (2 * EXTEND_RATIO), negligible, FREE.copy(),
                         np.ones(1))
    r, J = evaluate(np.ones(1))
    calls.clear()
    _accept(problem, state, proposal, (np.ones(1), r, J, old - decrease, np.ones(1)), decrease, 2 * EXTEND_RATIO,
            np.ones(1))
    return len(calls), float(state.x[0])


def test_a_creeping_step_is_extended_unless_it_ends_the_fit() -> None:
    """Two steps in a row beat their prediction: the second is tried longer (x = 2, then 4), except when it ends the
    fit anyway (negligible against the standard deviations, or a decrease below ftol): no evaluation is spent."""
    old = 0.5 * 4.0 ** 2
    assert _creeping_step(negligible=False, decrease=old - 0.5 * 3.0 ** 2) == (2, 4.0)
    assert _creeping_step(negligible=True, decrease=old - 0.5 * 3.0 ** 2) == (0, 1.0)
    assert _creeping_step(negligible=False, decrease=0.5 * LMSettings().ftol * old) == (0, 1.0)
