"""The engine written again in vectorised NumPy: a readable oracle the compiled kernels are tested against.

``dynamics`` (one step's contact data and the next-state map), ``geometry`` (closed-form contact
geometry) and ``solver`` (the primal-dual interior-point method) follow the same equations as
:mod:`sim2real.physics.kernels` in a different form (batched NumPy, not compiled loops); the tests
compare both on many states. Nothing in the package imports this.
"""

from __future__ import annotations

import numpy as np

from sim2real.params import ParameterSet
from sim2real.physics.layout import (
    PARAMS_OFFSET,
    PUSHER_END_SLICE,
    PUSHER_START_SLICE,
    SPHERE_END_SLICE,
    SPHERE_START_SLICE,
    STATE_SLICE,
    THETA_PARAMS,
    THETA_SIZE,
)
from sim2real.sim import BoxState


def problem_vector(params: ParameterSet, state: BoxState, start: np.ndarray | None = None,
                   end: np.ndarray | None = None) -> np.ndarray:
    """θ (THETA_SIZE,) of one step: ``state``, the pusher at the start and end of the step (3,: a sphere's
    centre; 6,: a capsule's segment end points; m world; None: no pusher) and ``params``."""
    theta = np.zeros(THETA_SIZE)
    theta[STATE_SLICE] = state.as_vector()
    if start is not None:
        wide = np.size(start) == 6
        theta[PUSHER_START_SLICE if wide else SPHERE_START_SLICE] = start
        theta[PUSHER_END_SLICE if wide else SPHERE_END_SLICE] = end
    theta[PARAMS_OFFSET:] = [params[name] for name in THETA_PARAMS]
    return theta
