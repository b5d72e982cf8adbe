"""Compiled per-step core of the engine (numba ``@njit(cache=True)`` on flat float64 arrays).

This package is the step that :class:`~sim2real.physics.world.BoxWorld` runs. It computes the same
maps as the vectorised NumPy oracle of the tests (``tests/oracle``: ``geometry``, ``dynamics``,
``solver``), which stays the readable specification and the cross-check, but without per-call
NumPy overhead: contact
geometry, residual, the block-eliminated Newton system, Nesterov-Todd scaling, the cone line
search, the predictor-corrector loop and the implicit-function-theorem back-substitution all run
in one compiled call per time step.

Layouts (``n`` contacts: 8 table corners, then the pusher if present):

* problem vector ``θ`` (:data:`~sim2real.physics.layout.THETA_SIZE`): state 13, pusher placement
  at the start and at the end of the step (6 + 6, m world: sphere centre and 3 unused numbers, or
  the capsule's two segment end points), parameters in the order of
  :data:`~sim2real.physics.layout.THETA_PARAMS`; read only through the named slots of
  :mod:`sim2real.physics.layout`;
* warm-start buffer (:data:`WARM_SIZE`): contacts ``n`` of the stored solution (0: none), its κ, its
  iterate ``w``; what :class:`~sim2real.physics.warm_start.WarmStart` holds between steps;
* iterate ``w`` (6 + 8n): ``a`` (6), ``γ`` (n), ``s`` (n), ``ξ`` (n × 3 row-major), ``η`` (n × 3);
* residual ``r`` (6 + 8n): dynamics (6), normal (n), cone head (n), slip (n × 2), complementarity
  of the normal pair (n), of the cone pair (n × 3). Sensitivity right-hand sides are columns of
  a (6 + 8n, k) matrix in the same row layout.

Stages, one module each: ``common`` (layouts of settings, info and trace; status codes; small
dense helpers), ``contact`` (geometry, problem data, next state), ``newton`` (residual, scaling,
factorisation, line search), ``iteration`` (the interior point), ``gradients`` (implicit Jacobian), ``step``
(the resting shortcut and the step kernel) and ``trajectory`` (consecutive steps in one call). The first call
of each function compiles it (a few seconds per function, then cached in ``__pycache__``); that cache is dropped
at import when any of the kernels' sources changed (:mod:`sim2real.physics.kernel_cache`).
"""

from __future__ import annotations

from sim2real.physics.kernel_cache import drop_stale_cache
from sim2real.physics.kernels import common, contact, gradients, iteration, newton, step, trajectory
from sim2real.physics.kernels.common import (  # noqa: F401
    _MASS_COLUMN,
    _PE,
    _PS,
    _SMALL_ANGLE,
    _T,
    ACTIVE_IMPULSE,
    ALL_COLUMNS,
    CONTACT_BAND,
    I_ACTIVE,
    I_BEST_USED,
    I_FAILED_KAPPA,
    I_ITERATIONS,
    I_KAPPA_VIO,
    I_PATH_ERROR,
    I_PUSHER_DISTANCE,
    I_PUSHER_IMPULSE,
    I_RESIDUAL_VIO,
    I_RESTING,
    I_SOLVED,
    I_TABLE_DISTANCE,
    INFO_SIZE,
    NO_TRACE,
    NO_WARM,
    PROBLEM_SCRATCH,
    S_ACCEPT_BEST,
    S_BACKTRACK,
    S_CONT_FACTOR,
    S_CONT_KAPPA,
    S_CONT_KAPPA_RTOL,
    S_CONT_RESIDUAL_TOL,
    S_GAP_FACTOR,
    S_GAP_PATIENCE,
    S_GRAD_KAPPA_RTOL,
    S_KAPPA_RTOL,
    S_MAX_BACKTRACKS,
    S_MAX_ITERATIONS,
    S_RESIDUAL_TOL,
    S_REST_ENABLED,
    S_REST_GAP_TOL,
    S_REST_KAPPA_MAX,
    S_REST_PUSHER_MARGIN,
    S_REST_SPEED_TOL,
    S_SKIP_BAND,
    S_TAU_MIN,
    S_TAU_SOC_MAX,
    SCRATCH_SIZE,
    SETTINGS_SIZE,
    STATUS_BEST_ITERATE,
    STATUS_BREAKDOWN,
    STATUS_NOT_CONVERGED,
    STATUS_OK,
    THETA_STEP,
    TRACE_COLUMNS,
    W_CONTACTS,
    W_ITERATE,
    W_KAPPA,
    W_MASK,
    WARM_MAX_ITERATIONS,
    WARM_SHIFT,
    WARM_SIZE,
    _invert3,
    _invert6,
    _rotation,
)
from sim2real.physics.kernels.contact import (  # noqa: F401
    _gap_sq,
    _piece,
    compact_contacts,
    inner_half,
    next_state,
    problem_data,
    pusher_box_distance,
    segment_box_parameters,
    select_contacts,
    sphere_box_distance,
)
from sim2real.physics.kernels.gradients import (  # noqa: F401
    implicit_jacobian,
)
from sim2real.physics.kernels.iteration import (  # noqa: F401
    _finite,
    initial_iterate,
    interior_point,
    pair_gap,
    warm_iterate,
)
from sim2real.physics.kernels.newton import (  # noqa: F401
    cone_search,
    equality_residual,
    factorize,
    nt_scaling,
    residual,
    solve,
    violations,
)
from sim2real.physics.kernels.step import (  # noqa: F401
    resting,
    step_kernel,
)
from sim2real.physics.kernels.trajectory import (  # noqa: F401
    steps_kernel,
)

#: The stage modules, in order (the warm-up checks every compiled function of each).
STAGES = (common, contact, newton, iteration, gradients, step, trajectory)

# numba reads its cache at a kernel's first call, not at import: checked here, before any call.
drop_stale_cache()
