"""Our engine's box world (the :class:`~sim2real.sim.world.World` contract): one free box, the table, an
optional kinematic pusher; steps and their implicit gradients, and runs of steps in one compiled loop."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sim2real.errors import InputError
from sim2real.params import ParameterSet
from sim2real.physics import kernels
from sim2real.physics.ladder import HardStep, settings_vector, solve_step
from sim2real.physics.layout import PARAMS_OFFSET, PUSHER_END_SLICE, PUSHER_START_SLICE, THETA_PARAMS, THETA_SIZE
from sim2real.physics.settings import SolverSettings
from sim2real.physics.warm_start import WarmStart
from sim2real.sim.outcome import StepOutcome
from sim2real.sim.shapes import Capsule, Sphere
from sim2real.sim.state import STATE_SIZE, BoxState
from sim2real.sim.step import ContactInfo, StepResult, checked_step_inputs
from sim2real.sim.trajectory import Trajectory, start_derivatives
from sim2real.sim.world import advance_each

#: Parameters a step can be differentiated with respect to.
DIFFERENTIABLE_PARAMS: tuple[str, ...] = THETA_PARAMS

__all__ = ["DIFFERENTIABLE_PARAMS", "BoxWorld", "advance_compiled"]


@dataclass(frozen=True)
class BoxWorld:
    """Box, table and pusher with fixed parameters.

    Attributes
    ----------
    params : ParameterSet
        Source of box geometry, mass, friction, κ values, ``sim.dt`` and ``sim.substeps``.
    pusher : Sphere, Capsule or None
        Pusher shape (its placement is given per step: a sphere by its centre (3,), a capsule by its
        two segment end points (6,); a capsule's segment is used as given, ``half_length`` is not
        enforced, so interpolated or perturbed placements are fine).
    settings : SolverSettings
    """

    params: ParameterSet
    pusher: Sphere | Capsule | None
    settings: SolverSettings = field(default_factory=SolverSettings)
    _params_theta: np.ndarray = field(init=False, repr=False, compare=False)
    _settings_vector: np.ndarray = field(init=False, repr=False, compare=False)
    _step_constants: tuple[float, int, float, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        edge = float(self.params["box.edge_radius"])
        smallest = min(float(self.params[f"box.size_{axis}"]) for axis in "xyz")
        if edge >= 0.5 * smallest:
            raise InputError(f"box.edge_radius = {edge:g} m must be below half the smallest box size "
                             f"({0.5 * smallest:g} m)")
        # Parameters and settings never change for a world: pack them once for the compiled step.
        values = [float(self.params[name]) for name in THETA_PARAMS]
        if self.pusher is not None:
            values[THETA_PARAMS.index("pusher.radius")] = self.pusher.radius
        object.__setattr__(self, "_params_theta", np.array(values))
        object.__setattr__(self, "_settings_vector", settings_vector(self.settings))
        object.__setattr__(self, "_step_constants", (
            float(self.params["sim.dt"]), int(self.params["sim.substeps"]), float(self.params["contact.kappa_sim"]),
            float(self.params["contact.kappa_grad"])))

    @classmethod
    def from_params(cls, params: ParameterSet, pusher: Sphere | Capsule | str | None = "sphere",
                    settings: SolverSettings | None = None) -> BoxWorld:
        """World from parameters; the default pusher is a sphere of radius ``pusher.radius``.

        A :class:`Capsule` (or :class:`Sphere`) given here sets ``pusher.radius`` for the step (its
        radius is what the engine uses and what ``pusher.radius`` gradients refer to).
        """
        shape = Sphere(float(params["pusher.radius"])) if pusher == "sphere" else pusher
        return cls(params, shape, settings or SolverSettings())  # type: ignore[arg-type]

    #: Registry name and gradient method (the :class:`~sim2real.sim.World` interface).
    engine = "ours"
    gradient_method = "implicit"
    differentiable = DIFFERENTIABLE_PARAMS

    def with_params(self, values: dict[str, float]) -> BoxWorld:
        """The same world with some parameters changed."""
        return BoxWorld(self.params.replace(values), self.pusher, self.settings)

    @property
    def dt(self) -> float:
        """Time step, s."""
        return float(self.params["sim.dt"])

    @property
    def substeps(self) -> int:
        """Engine sub-steps per time step."""
        return int(self.params["sim.substeps"])

    @property
    def half_size(self) -> np.ndarray:
        """Half edge lengths of the box, m, body frame, shape (3,)."""
        return 0.5 * np.array([self.params["box.size_x"], self.params["box.size_y"], self.params["box.size_z"]])

    def advance(self, traj: Trajectory, first: int, last: int, running: np.ndarray | None = None,
                running0: np.ndarray | None = None) -> None:
        """Steps ``first .. last - 1`` of ``traj`` in place (the :class:`~sim2real.sim.World` interface).

        The steps the escalation ladder's first rung solves run in one compiled call
        (:func:`~sim2real.physics.kernels.steps_kernel`), each other step through :meth:`step`: the result
        is that of calling :meth:`step` for every step with ``traj.warm``. ``running`` (13, P) and
        ``running0`` (13, 13) are the derivatives of ``traj.states[first]`` (default zero and identity),
        updated in place. See :func:`sim2real.physics.world.advance_compiled`.
        """
        advance_compiled(self, traj, first, last, running, running0)

    def _theta(self, state: BoxState, start: np.ndarray | None, end: np.ndarray | None) -> np.ndarray:
        """The step's problem vector θ (:mod:`sim2real.physics.layout`): the state, the pusher placements
        (flattened (3,) or (6,), m, world; a sphere's padded with zeros; both None: no pusher) and the parameters."""
        theta = np.empty(THETA_SIZE)
        theta[0:13] = state.as_vector()
        theta[13:PARAMS_OFFSET] = 0.0
        if start is not None and end is not None:
            theta[PUSHER_START_SLICE.start:PUSHER_START_SLICE.start + start.size] = start
            theta[PUSHER_END_SLICE.start:PUSHER_END_SLICE.start + end.size] = end
        theta[PARAMS_OFFSET:] = self._params_theta
        return theta

    def new_warm_start(self) -> WarmStart:
        """An empty memory of a trajectory's previous contact solution (see :mod:`sim2real.physics.warm_start`)."""
        return WarmStart()

    def step(self, state: BoxState, pusher_start: np.ndarray | None = None, pusher_end: np.ndarray | None = None,
             grad: bool = False, param_names: Sequence[str] = (), step_index: int | None = None,
             warm_start: object | None = None) -> StepResult:
        """Advance the box by one time step ``sim.dt``.

        The numerical work runs in one compiled call (:func:`~sim2real.physics.kernels.step_kernel`).
        A forward step of a box resting flat on the table with the pusher out of reach returns
        "stays at rest" without iterating (``iterations == 0``; see
        :attr:`SolverSettings.resting_shortcut`); steps with gradients always run the solver.

        Parameters
        ----------
        state : BoxState
        pusher_start, pusher_end : ndarray (3,) or (6,), or None
            Pusher placement at the start and end of the step, m, world: the sphere's centre (3,)
            or the capsule's segment end points ``(a, b)`` flattened (6,); it moves linearly in
            between. Both None: no pusher contact this step.
        grad : bool
            Also return the implicit derivatives of the next state.
        param_names : sequence of str
            Parameters to differentiate with respect to (subset of :data:`DIFFERENTIABLE_PARAMS`).
        step_index : int, optional
            Used in error messages only.
        warm_start : WarmStart, optional
            The trajectory's memory of its previous step (from :meth:`new_warm_start`): the solve starts
            from that step's solution and leaves its own there (see :mod:`sim2real.physics.warm_start`).
            None: a cold start, the step a pure function of its arguments.

        Returns
        -------
        StepResult

        A step always returns a state: when the first solve does not converge, the escalation ladder
        of :func:`~sim2real.physics.ladder.solve_step` takes over and ``outcome`` says how it ended.

        Raises
        ------
        SimulationError
            With ``settings.strict``, when the answer would be degraded (the message names the step,
            the rungs tried and the violations).
        Sim2RealError
            For bad arguments (wrong shapes, non-finite pusher placement).
        """
        warm = _own_warm_start(warm_start)
        names, start_placement, end_placement = checked_step_inputs(
            "the engine", DIFFERENTIABLE_PARAMS, self.pusher, param_names, pusher_start, pusher_end, step_index)
        with_pusher = start_placement is not None
        capsule = isinstance(self.pusher, Capsule)
        theta = self._theta(state, start_placement, end_placement)
        dt, substeps, kappa_sim, kappa_grad = self._step_constants
        problem = HardStep(theta, dt, substeps, with_pusher, capsule, kappa_sim, kappa_grad, grad, self.settings,
                           step_index=step_index)
        solution = solve_step(problem, strict=self.settings.strict, first_vector=self._settings_vector,
                              warm=warm)
        info = solution.info
        if solution.outcome != StepOutcome.CONVERGED:
            problem = problem.with_context(outcome=solution.outcome.label, rung=solution.rung.name,
                                           violation=solution.violation)
        contacts = ContactInfo(
            active=int(info[kernels.I_ACTIVE]),
            table_distance=float(info[kernels.I_TABLE_DISTANCE]),
            pusher_distance=float(info[kernels.I_PUSHER_DISTANCE]),
            pusher_force=float(info[kernels.I_PUSHER_IMPULSE]) / dt,
            in_solve=int(info[kernels.I_SOLVED]),
        )
        iterations = solution.iterations
        violation = solution.violation
        next_state = BoxState._from_engine(solution.next_state)
        hard = problem if solution.outcome != StepOutcome.CONVERGED else None
        if not grad:
            return StepResult(state=next_state, contacts=contacts, iterations=iterations, violation=violation,
                              param_names=names, outcome=solution.outcome, rung=solution.rung.name,
                              kappa=solution.kappa, problem=hard)
        jacobian = solution.jacobian
        assert jacobian is not None  # a solve asked for gradients returns them
        param_cols = [PARAMS_OFFSET + THETA_PARAMS.index(n) for n in names]
        size = 6 if capsule else 3
        start_cols = slice(PUSHER_START_SLICE.start, PUSHER_START_SLICE.start + size)
        end_cols = slice(PUSHER_END_SLICE.start, PUSHER_END_SLICE.start + size)
        return StepResult(
            state=next_state, contacts=contacts, iterations=iterations, violation=violation,
            d_state=jacobian[:, 0:13].copy(),
            d_pusher_start=jacobian[:, start_cols].copy() if with_pusher else np.zeros((13, size)),
            d_pusher_end=jacobian[:, end_cols].copy() if with_pusher else np.zeros((13, size)),
            d_params=jacobian[:, param_cols].copy(), param_names=names, smoothed_state=solution.smoothed_state,
            outcome=solution.outcome, rung=solution.rung.name, kappa=solution.kappa, problem=hard)


def _own_warm_start(warm_start: object | None) -> WarmStart | None:
    """``warm_start`` as our engine's :class:`WarmStart` (None stays None); another engine's memory is refused."""
    if warm_start is None or isinstance(warm_start, WarmStart):
        return warm_start
    raise InputError(f"warm_start must come from this engine's new_warm_start(), got {type(warm_start).__name__}")


#: Stand-ins for the arrays of a run without pusher or without derivatives (the compiled loop's types).
_NO_PATH = np.zeros((1, 3))
_NO_SENS = np.zeros((0, STATE_SIZE, 0))
_NO_RUNNING = np.zeros((STATE_SIZE, 0))
_NO_SENS0 = np.zeros((0, STATE_SIZE, STATE_SIZE))
_NO_RUNNING0 = np.zeros((STATE_SIZE, STATE_SIZE))


def advance_compiled(world: BoxWorld, traj: Trajectory, first: int, last: int, running: np.ndarray | None = None,
                     running0: np.ndarray | None = None) -> None:
    """Our engine's :func:`advance_each`: the compiled loop runs the steps the ladder's first rung solves, and
    each step it hands back goes through ``world.step`` (the whole ladder); the same states, derivatives,
    outcomes and warm starts as :func:`advance_each`, without the per-step Python work.

    Raises
    ------
    Sim2RealError
        A parameter the world cannot differentiate, a pusher path without a pusher, or a placement that is
        not finite (before any step is run).
    SimulationError
        In strict mode, for a step that would be degraded (from ``world.step``).
    """
    running, running0 = start_derivatives(traj, running, running0)
    warm = _own_warm_start(traj.warm)
    if warm is None:
        traj.warm = warm = WarmStart()
    for name in traj.names:
        if name not in world.differentiable:
            raise InputError(f"parameter '{name}' is not differentiable by the engine")
    path = _checked_path(world, traj, first, last)
    theta = np.empty(THETA_SIZE)
    theta[PARAMS_OFFSET:] = world._params_theta
    param_cols = np.array([PARAMS_OFFSET + THETA_PARAMS.index(n) for n in traj.names], dtype=np.int64)
    sens, run = _NO_SENS, _NO_RUNNING
    if traj.sens is not None and running is not None:  # start_derivatives gives both or neither
        sens, run = traj.sens, running
    sens0, run0 = _NO_SENS0, _NO_RUNNING0
    if traj.sens0 is not None and running0 is not None:
        sens0, run0 = traj.sens0, running0
    dt, substeps, kappa_sim, kappa_grad = world._step_constants
    t = first
    while t < last:
        stop = kernels.steps_kernel(theta, path, t, last, dt, substeps, traj.path is not None,
                                    isinstance(world.pusher, Capsule), kappa_sim, kappa_grad, traj.grad,
                                    world._settings_vector, param_cols, traj.columns, traj.states, sens, run, sens0,
                                    run0, traj.records, warm.buffer)
        traj.outcomes[t:stop] = 0
        traj.log.converged(stop - t)
        if stop == last:
            return
        advance_each(world, traj, stop, stop + 1, running, running0)
        t = stop + 1


def _checked_path(world: BoxWorld, traj: Trajectory, first: int, last: int) -> np.ndarray:
    """The pusher path as the compiled loop reads it (rows ``first .. last`` finite), or a stand-in."""
    if traj.path is None:
        return _NO_PATH
    if world.pusher is None:
        raise InputError("this world has no pusher shape, but a pusher path was given")
    path = np.ascontiguousarray(traj.path, dtype=float)
    if path.ndim != 2 or path.shape[1] != world.pusher.placement_size:
        raise InputError(f"the pusher path must have {world.pusher.placement_size} numbers per row (m, world), "
                         f"got shape {path.shape}")
    bad = np.flatnonzero(~np.isfinite(path[first:last + 1]).all(axis=1))
    if bad.size:
        row = first + int(bad[0])
        raise InputError(f"the pusher placement at step boundary {row} is not finite: {path[row].tolist()}")
    return path
