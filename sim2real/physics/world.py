"""The box world: one free box, the table, an optional kinematic pusher; steps and their gradients."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.params import ParameterSet, spec
from sim2real.physics import kernels
from sim2real.physics.errors import SimulationError
from sim2real.physics.ladder import HardStep, settings_vector, solve_step
from sim2real.physics.layout import PARAMS_OFFSET, PUSHER_END_SLICE, PUSHER_START_SLICE, THETA_PARAMS, THETA_SIZE
from sim2real.physics.outcome import StepOutcome
from sim2real.physics.settings import SolverSettings
from sim2real.physics.shapes import Capsule, Sphere
from sim2real.physics.state import BoxState
from sim2real.physics.warm_start import WarmStart

if TYPE_CHECKING:
    from sim2real.physics.trajectory import Trajectory

#: Parameters a step can be differentiated with respect to.
DIFFERENTIABLE_PARAMS: tuple[str, ...] = THETA_PARAMS

__all__ = ["DIFFERENTIABLE_PARAMS", "BoxWorld", "ContactInfo", "SimulationError", "StepResult"]


@dataclass(frozen=True)
class ContactInfo:
    """Contact summary of one step.

    Attributes
    ----------
    active : int
        Contacts carrying a normal impulse above 1e-3 m g dt.
    table_distance : float
        Lowest box corner above the table at the end of the step, m (negative = penetration).
    pusher_distance : float
        Pusher-box signed distance at the end of the step, m (``inf`` without pusher).
    pusher_force : float
        Mean pusher-box normal force over the step, N.
    in_solve : int
        Contacts in the step's solve (the others were far from touching); -1 when the engine does not say.
    """

    active: int
    table_distance: float
    pusher_distance: float
    pusher_force: float
    in_solve: int = -1


@dataclass(frozen=True)
class StepResult:
    """Outcome of :meth:`BoxWorld.step`.

    Attributes
    ----------
    state : BoxState
        State at the end of the step (solved at ``contact.kappa_sim``, hard contact).
    contacts : ContactInfo
    iterations : int
        Interior-point iterations (all central-path targets, all sub-steps).
    violation : tuple of float
        (residual violation, complementarity violation) of the final solve, scaled.
    d_state : ndarray (13, 13) or None
        d next state / d state (raw quaternion components; their radial direction has no effect).
    d_pusher_start, d_pusher_end : ndarray (13, 3) or (13, 6), or None
        d next state / d pusher placement at the start / end of the step (m world): the sphere's
        centre (13, 3), or the capsule's two segment end points (13, 6).
    d_params : ndarray (13, p) or None
        d next state / d parameter, in the order asked for.
    param_names : tuple of str
    smoothed_state : ndarray (13,) or None
        With gradients: the next state at ``contact.kappa_grad``, the point the gradients belong to.
    outcome : StepOutcome
        Converged, recovered (by the escalation ladder) or degraded (see :mod:`sim2real.physics.ladder`).
    rung : str
        The ladder rung that produced the answer (``"first"`` when converged).
    kappa : float
        Central-path value of ``state`` (larger than ``contact.kappa_sim`` only when degraded).
    problem : HardStep or None
        For a recovered or degraded step: the step, ready to be saved and re-solved.
    """

    state: BoxState
    contacts: ContactInfo
    iterations: int
    violation: tuple[float, float]
    d_state: np.ndarray | None = None
    d_pusher_start: np.ndarray | None = None
    d_pusher_end: np.ndarray | None = None
    d_params: np.ndarray | None = None
    param_names: tuple[str, ...] = ()
    smoothed_state: np.ndarray | None = field(default=None, repr=False)
    outcome: StepOutcome = StepOutcome.CONVERGED
    rung: str = "first"
    kappa: float = 0.0
    problem: HardStep | None = field(default=None, repr=False)


def checked_step_inputs(engine: str, differentiable: Sequence[str], pusher: Sphere | Capsule | None,
                        param_names: Sequence[str], pusher_start: np.ndarray | None, pusher_end: np.ndarray | None,
                        step_index: int | None = None
                        ) -> tuple[tuple[str, ...], np.ndarray | None, np.ndarray | None]:
    """The arguments of a world's ``step`` checked: parameter names, and the pusher placements flattened.

    Returns
    -------
    names : tuple of str
    start, end : ndarray (3,) or (6,), or None
        Both None when the step has no pusher.

    Raises
    ------
    Sim2RealError
        An unknown or non-differentiable name (``engine`` names the engine in the message), one placement
        without the other, a placement without a pusher shape, a placement of the wrong size or not finite.
    """
    names = tuple(param_names)
    for name in names:
        spec(name)
        if name not in differentiable:
            raise Sim2RealError(f"parameter '{name}' is not differentiable by {engine} "
                                f"(choose from {', '.join(differentiable)})")
    with_pusher = pusher_start is not None or pusher_end is not None
    if not with_pusher:
        return names, None, None
    if pusher_start is None or pusher_end is None:
        raise Sim2RealError("give both pusher_start and pusher_end, or neither")
    if pusher is None:
        raise Sim2RealError("this world has no pusher shape, but a pusher placement was given")
    size = pusher.placement_size
    placements = []
    for label, placement in (("pusher_start", pusher_start), ("pusher_end", pusher_end)):
        if np.size(placement) != size:
            raise Sim2RealError(f"{label} of a {type(pusher).__name__.lower()} pusher must have "
                                f"{size} numbers (m, world), got shape {np.shape(placement)}")
        flat = np.asarray(placement, dtype=float).ravel()
        if not np.isfinite(flat).all():
            where = f" at step {step_index}" if step_index is not None else ""
            raise Sim2RealError(f"{label}{where} is not finite: {flat.tolist()}")
        placements.append(flat)
    return names, placements[0], placements[1]


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
            raise Sim2RealError(f"box.edge_radius = {edge:g} m must be below half the smallest box size "
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

    #: Registry name and gradient method (the :class:`~sim2real.engines.World` interface).
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
        """Steps ``first .. last - 1`` of ``traj`` in place (the :class:`~sim2real.engines.World` interface).

        The steps the escalation ladder's first rung solves run in one compiled call
        (:func:`~sim2real.physics.kernels.steps_kernel`), each other step through :meth:`step`: the result
        is that of calling :meth:`step` for every step with ``traj.warm``. ``running`` (13, P) and
        ``running0`` (13, 13) are the derivatives of ``traj.states[first]`` (default zero and identity),
        updated in place. See :func:`sim2real.physics.trajectory.advance_compiled`.
        """
        from sim2real.physics.trajectory import advance_compiled

        advance_compiled(self, traj, first, last, running, running0)

    def step(self, state: BoxState, pusher_start: np.ndarray | None = None, pusher_end: np.ndarray | None = None,
             grad: bool = False, param_names: Sequence[str] = (), step_index: int | None = None,
             warm_start: WarmStart | None = None) -> StepResult:
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
            The trajectory's memory of its previous step: the solve starts from that step's solution
            and leaves its own there (see :mod:`sim2real.physics.warm_start`). None: a cold start, the
            step a pure function of its arguments.

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
        names, start_placement, end_placement = checked_step_inputs(
            "the engine", DIFFERENTIABLE_PARAMS, self.pusher, param_names, pusher_start, pusher_end, step_index)
        with_pusher = start_placement is not None
        capsule = isinstance(self.pusher, Capsule)
        theta = np.empty(THETA_SIZE)
        theta[0:3] = state.position
        theta[3:7] = state.quaternion
        theta[7:10] = state.linear_velocity
        theta[10:13] = state.angular_velocity
        if with_pusher:
            assert start_placement is not None and end_placement is not None
            size = start_placement.size
            start, end = PUSHER_START_SLICE.start, PUSHER_END_SLICE.start
            theta[start:start + size] = start_placement
            theta[end:end + size] = end_placement
            if not capsule:
                theta[PUSHER_START_SLICE.start + 3:PUSHER_START_SLICE.stop] = 0.0
                theta[PUSHER_END_SLICE.start + 3:PUSHER_END_SLICE.stop] = 0.0
        else:
            theta[13:PARAMS_OFFSET] = 0.0
        theta[PARAMS_OFFSET:] = self._params_theta
        dt, substeps, kappa_sim, kappa_grad = self._step_constants
        problem = HardStep(theta, dt, substeps, with_pusher, capsule, kappa_sim, kappa_grad, grad, self.settings,
                           step_index=step_index)
        solution = solve_step(problem, strict=self.settings.strict, first_vector=self._settings_vector,
                              warm=warm_start)
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
        ladder = {"outcome": solution.outcome, "rung": solution.rung.name, "kappa": solution.kappa,
                  "problem": problem if solution.outcome != StepOutcome.CONVERGED else None}
        if not grad:
            return StepResult(state=next_state, contacts=contacts, iterations=iterations, violation=violation,
                              param_names=names, **ladder)
        jacobian = solution.jacobian
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
            **ladder)
