"""The box world: one free box, the table, an optional kinematic pusher; steps and their gradients."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.params import ParameterSet, spec
from sim2real.physics.dynamics import (
    GRAVITY,
    PARAMS_OFFSET,
    PUSHER_END_SLICE,
    PUSHER_START_SLICE,
    THETA_PARAMS,
    THETA_SIZE,
    next_state,
    problem_data,
)
from sim2real.physics.geometry import sphere_box_distance, table_distance
from sim2real.physics.shapes import Capsule, Sphere
from sim2real.physics.solver import (
    Residual,
    SolverFailureError,
    SolverSettings,
    equality_residual,
    factorize,
    interior_point,
    solve,
)
from sim2real.physics.state import BoxState
from sim2real.spatial import to_matrix

#: Parameters a step can be differentiated with respect to.
DIFFERENTIABLE_PARAMS: tuple[str, ...] = THETA_PARAMS

#: Relative finite-difference step used for the parameter-side partials ∂r/∂θ (see BoxWorld.step).
_THETA_STEP = 1e-7

#: Normal impulse (in units of m g dt) above which a contact counts as active.
_ACTIVE_IMPULSE = 1e-3


class SimulationError(Sim2RealError):
    """A step could not be solved; the message names the step and the solver's violations."""


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
    """

    active: int
    table_distance: float
    pusher_distance: float
    pusher_force: float


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
    d_pusher_start, d_pusher_end : ndarray (13, 3) or None
        d next state / d pusher centre at the start / end of the step (m world).
    d_params : ndarray (13, p) or None
        d next state / d parameter, in the order asked for.
    param_names : tuple of str
    smoothed_state : ndarray (13,) or None
        With gradients: the next state at ``contact.kappa_grad``, the point the gradients belong to.
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


@dataclass(frozen=True)
class BoxWorld:
    """Box, table and pusher with fixed parameters.

    Attributes
    ----------
    params : ParameterSet
        Source of box geometry, mass, friction, κ values, ``sim.dt`` and ``sim.substeps``.
    pusher : Sphere or None
        Pusher shape (its placement is given per step).
    settings : SolverSettings
    """

    params: ParameterSet
    pusher: Sphere | Capsule | None
    settings: SolverSettings = field(default_factory=SolverSettings)

    def __post_init__(self) -> None:
        if isinstance(self.pusher, Capsule):
            raise Sim2RealError("capsule pushers are not implemented yet; use a sphere")

    @classmethod
    def from_params(cls, params: ParameterSet, pusher: Sphere | Capsule | str | None = "sphere",
                    settings: SolverSettings | None = None) -> BoxWorld:
        """World from parameters; the default pusher is a sphere of radius ``pusher.radius``."""
        shape = Sphere(float(params["pusher.radius"])) if pusher == "sphere" else pusher
        return cls(params, shape, settings or SolverSettings())  # type: ignore[arg-type]

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

    def _param_vector(self) -> np.ndarray:
        values = [float(self.params[name]) for name in THETA_PARAMS]
        if self.pusher is not None:
            values[THETA_PARAMS.index("pusher.radius")] = self.pusher.radius
        return np.array(values)

    def step(self, state: BoxState, pusher_start: np.ndarray | None = None, pusher_end: np.ndarray | None = None,
             grad: bool = False, param_names: Sequence[str] = (), step_index: int | None = None) -> StepResult:
        """Advance the box by one time step ``sim.dt``.

        Parameters
        ----------
        state : BoxState
        pusher_start, pusher_end : ndarray (3,) or None
            Pusher (sphere) centre at the start and end of the step, m, world; it moves linearly
            in between. Both None: no pusher contact this step.
        grad : bool
            Also return the implicit derivatives of the next state.
        param_names : sequence of str
            Parameters to differentiate with respect to (subset of :data:`DIFFERENTIABLE_PARAMS`).
        step_index : int, optional
            Used in error messages only.

        Returns
        -------
        StepResult

        Raises
        ------
        SimulationError
            If the contact solver does not converge (message names the step and the violations).
        Sim2RealError
            For bad arguments.
        """
        names = tuple(param_names)
        for name in names:
            spec(name)
            if name not in DIFFERENTIABLE_PARAMS:
                raise Sim2RealError(f"parameter '{name}' is not differentiable by the engine "
                                    f"(choose from {', '.join(DIFFERENTIABLE_PARAMS)})")
        with_pusher = pusher_start is not None or pusher_end is not None
        if with_pusher and (pusher_start is None or pusher_end is None):
            raise Sim2RealError("give both pusher_start and pusher_end, or neither")
        if with_pusher and self.pusher is None:
            raise Sim2RealError("this world has no pusher shape, but a pusher placement was given")
        theta = np.zeros(THETA_SIZE)
        theta[0:13] = state.as_vector()
        if with_pusher:
            theta[PUSHER_START_SLICE] = np.asarray(pusher_start, dtype=float).reshape(3)
            theta[PUSHER_END_SLICE] = np.asarray(pusher_end, dtype=float).reshape(3)
        theta[PARAMS_OFFSET:] = self._param_vector()
        n_sub = self.substeps
        total = np.eye(THETA_SIZE)[:13] if grad else None  # d x_current / d θ_step
        iterations = 0
        smoothed = None
        for k in range(n_sub):
            sub = theta.copy()
            if with_pusher:
                p0, p1 = theta[PUSHER_START_SLICE], theta[PUSHER_END_SLICE]
                sub[PUSHER_START_SLICE] = p0 + (p1 - p0) * (k / n_sub)
                sub[PUSHER_END_SLICE] = p0 + (p1 - p0) * ((k + 1) / n_sub)
            x_next, its, vio, jac, smoothed, impulse = self._substep(sub, with_pusher, grad, step_index)
            iterations += its
            if grad:
                assert total is not None and jac is not None
                # Chain: the sub-step sees the current state and sub-pusher positions (affine in θ).
                lift = np.zeros((THETA_SIZE, THETA_SIZE))
                lift[0:13] = total
                lift[13:] = np.eye(THETA_SIZE)[13:]
                if with_pusher:
                    lift[PUSHER_START_SLICE] = 0.0
                    lift[PUSHER_START_SLICE, PUSHER_START_SLICE] = np.eye(3) * (1 - k / n_sub)
                    lift[PUSHER_START_SLICE, PUSHER_END_SLICE] = np.eye(3) * (k / n_sub)
                    lift[PUSHER_END_SLICE] = 0.0
                    lift[PUSHER_END_SLICE, PUSHER_START_SLICE] = np.eye(3) * (1 - (k + 1) / n_sub)
                    lift[PUSHER_END_SLICE, PUSHER_END_SLICE] = np.eye(3) * ((k + 1) / n_sub)
                total = jac @ lift
            theta[0:13] = x_next
        next_vec = theta[0:13]
        half = self.half_size
        table_h = float(self.params["contact.table_height"])
        pusher_distance = float("inf")
        if with_pusher:
            assert isinstance(self.pusher, Sphere)
            rotation = to_matrix(next_vec[3:7])
            centre_body = rotation.T @ (theta[PUSHER_END_SLICE] - next_vec[0:3])
            pusher_distance = float(sphere_box_distance(centre_body, half, np.array(self.pusher.radius))[0])
        info = ContactInfo(
            active=int(impulse[0]),
            table_distance=float(table_distance(next_vec, half, table_h)),
            pusher_distance=pusher_distance,
            pusher_force=float(impulse[1]) / self.dt,
        )
        result = StepResult(state=BoxState.from_vector(next_vec), contacts=info, iterations=iterations,
                            violation=(vio[0], vio[1]), param_names=names)
        if not grad:
            return result
        assert total is not None
        param_cols = [PARAMS_OFFSET + THETA_PARAMS.index(n) for n in names]
        return StepResult(
            state=result.state, contacts=info, iterations=iterations, violation=result.violation,
            d_state=total[:, 0:13].copy(),
            d_pusher_start=total[:, PUSHER_START_SLICE].copy() if with_pusher else np.zeros((13, 3)),
            d_pusher_end=total[:, PUSHER_END_SLICE].copy() if with_pusher else np.zeros((13, 3)),
            d_params=total[:, param_cols].copy(), param_names=names, smoothed_state=smoothed,
        )

    def _substep(self, theta: np.ndarray, with_pusher: bool, grad: bool, step_index: int | None):
        """One engine step of length dt/substeps from problem vector ``theta``.

        Returns the next state (13,), iterations, violations, d next / d θ (13, THETA_SIZE) or None,
        the smoothed next state or None, and (active contact count, pusher normal impulse N s).
        """
        dt = self.dt / self.substeps
        data = problem_data(theta, dt, with_pusher)
        kappa_sim = float(self.params["contact.kappa_sim"])
        kappa_grad = float(self.params["contact.kappa_grad"])
        targets = sorted({kappa_sim, kappa_grad} if grad else {kappa_sim}, reverse=True)
        w = None
        iterations = 0
        jacobian = None
        smoothed = None
        for kappa in targets:
            try:
                w, its, vio = interior_point(data, dt, kappa, self.settings, start=w)
            except SolverFailureError as err:
                where = f"step {step_index}" if step_index is not None else "step"
                raise SimulationError(f"{where}: {err} at kappa={kappa:g}") from None
            iterations += its
            if grad and kappa == kappa_grad:
                jacobian, smoothed = self._implicit_jacobian(theta, w, data, dt, with_pusher)
        assert w is not None
        x_next = next_state(theta, w.a, dt)
        gamma_units = w.gamma / float(data.impulse_scale)
        impulse = (int(np.sum(gamma_units > _ACTIVE_IMPULSE)), float(w.gamma[-1]) if with_pusher else 0.0)
        return x_next, iterations, vio, jacobian, smoothed, impulse

    def _implicit_jacobian(self, theta: np.ndarray, w, data, dt: float, with_pusher: bool):
        """d next state / d θ at the solution ``w`` (implicit function theorem).

        ``da/dθ = -R⁻¹ ∂r/∂θ`` with ``R`` the factorised residual Jacobian at ``w`` (one
        back-substitution for all columns). The partials ``∂r/∂θ`` and ``∂x⁺/∂(θ, a)`` of the
        closed-form residual and next-state maps are evaluated by central differences in one
        vectorised batch (the maps are smooth wherever the contact geometry is).
        """
        f = factorize(w, data, dt)
        n_theta = THETA_SIZE
        steps = _THETA_STEP * np.maximum(1.0, np.abs(theta))
        perturbed = np.concatenate((theta + np.diag(steps), theta - np.diag(steps)), axis=0)  # (2T, T)
        batch = problem_data(perturbed, dt, with_pusher)
        dyn, normal, head, slip = equality_residual(w, batch, dt)
        two_h = 2.0 * steps
        d_dyn = ((dyn[:n_theta] - dyn[n_theta:]) / two_h[:, None]).T
        d_normal = ((normal[:n_theta] - normal[n_theta:]) / two_h[:, None]).T
        d_head = ((head[:n_theta] - head[n_theta:]) / two_h[:, None]).T
        d_slip = np.moveaxis((slip[:n_theta] - slip[n_theta:]) / two_h[:, None, None], 0, -1)
        # Complementarity rows depend on θ only through the units of κ (the box mass).
        kappa = float(self.params["contact.kappa_grad"])
        n = data.contact_count
        d_unit = np.zeros(n_theta)
        mass_col = PARAMS_OFFSET + THETA_PARAMS.index("box.mass")
        d_unit[mass_col] = (GRAVITY * dt) ** 2  # d(m g dt · g dt)/dm
        d_comp_normal = -kappa * np.broadcast_to(d_unit, (n, n_theta))
        d_comp_cone = np.zeros((n, 3, n_theta))
        d_comp_cone[:, 0] = -kappa * d_unit
        rhs = Residual(d_dyn, d_normal, d_head, d_slip, d_comp_normal, d_comp_cone)
        da = solve(f, rhs).a  # (6, T): already -R⁻¹ ∂r/∂θ
        # Next-state map partials.
        x_theta = next_state(perturbed, np.broadcast_to(w.a, (2 * n_theta, 6)), dt)
        dx_dtheta = ((x_theta[:n_theta] - x_theta[n_theta:]) / two_h[:, None]).T
        a_steps = 1e-7 * np.maximum(1.0, np.abs(w.a))
        a_pert = np.concatenate((w.a + np.diag(a_steps), w.a - np.diag(a_steps)), axis=0)
        x_a = next_state(np.broadcast_to(theta, (12, n_theta)), a_pert, dt)
        dx_da = ((x_a[:6] - x_a[6:]) / (2.0 * a_steps)[:, None]).T
        smoothed = next_state(theta, w.a, dt)
        return dx_dtheta + dx_da @ da, smoothed

