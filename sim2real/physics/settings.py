"""Tolerances and constants of the engine's interior-point method (:class:`SolverSettings`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SolverSettings:
    """Tolerances and constants of the interior-point method.

    Attributes
    ----------
    residual_tol : float
        Converged when every scaled equality row is below this.
    kappa_rtol : float
        ... and every complementarity product is within ``kappa_rtol * κ`` of its target κ.
    gradient_kappa_rtol : float
        ``kappa_rtol`` of the solves whose point is differentiated (the gradient κ): the implicit gradients
        move with the point by about its relative distance from the central path (1.5 % on a steady push
        at 1e-2, where the solve happened to stop), so those solves are centred ten times tighter (or as
        tightly as ``kappa_rtol``, if that is tighter).
    max_iterations : int
        Newton iterations allowed per central-path target.
    tau_min, tau_soc_max : float
        Fraction-to-boundary constants (Dojo Alg. 2: 0.95 and 0.99).
    backtrack : float
        Step-size decay of the violation line search.
    max_backtracks : int
        Halvings allowed per iteration.
    continuation_kappa : float
        Intermediate central-path value: a solve for a smaller κ first approaches the central
        path at this value (to the looser tolerances below) and only then aims at κ. Without it
        the predictor drives the complementarity to ~κ while the equality rows are still violated;
        near κ → 0 the sliding friction-cone pairs then sit against their cone boundaries (scaling
        condition ~1/κ) and every step is cut short by the cone line search.
    continuation_residual_tol, continuation_kappa_rtol : float
        Tolerances that end the intermediate stage.
    gap_factor, gap_patience : float, int
        A forward (hard-contact) solve, whose point is not differentiated, that has not reached the
        central-path point within ``gap_patience`` iterations is also converged once the equality
        rows are within ``residual_tol`` and every pair's duality gap (``γ s`` and ``ξᵀη``) is at
        most ``gap_factor κ`` (Dojo's complementarity criterion, eq. 50, on the gaps). The
        off-diagonal Jordan components ``ξ₁ η_t + η₁ ξ_t`` of a sliding pair are then
        bounded by ``√(2 ξ₁ η₁ gap)`` (friction direction within ~1e-3 rad of the slip), but
        centring them to ``kappa_rtol κ`` takes dozens of short steps when the box both slides and
        spins, since ξ and η must turn on their cone boundaries. Centring first keeps the cheap,
        common steps exactly on the central path (e.g. a straight slide stays free of spin).
    resting_shortcut : bool
        Let a forward step (no gradients) of a box resting flat on the table, with the pusher
        out of reach for the whole step, return "stays at rest" without iterating (the exact
        hard-contact solution; see ``kernels.resting``). Steps with gradients always solve.
    resting_speed_tol : float
        Largest velocity component (m/s, rad/s) that counts as at rest.
    resting_gap_tol : float
        Largest distance of the four lowest corners from the table, m, that counts as lying on it.
    resting_pusher_margin : float
        Clearance the pusher must keep from the box over the whole step, m.
    resting_kappa_max : float
        The shortcut is the hard-contact answer, so it is only taken when ``contact.kappa_sim`` is at
        most this (at κ the solver keeps the box ~``4 κ g dt`` m/s off the table).
    skip_band : float
        A contact whose gap (m) at the start of a step, and its gap if the box kept its velocity over the
        step, are both wider than this is left out of the step's solve (a corner high above the table, a
        pusher away from the box): its impulse on the central path is ``κ m g dt · g dt / s`` with ``s``
        above ``skip_band / dt``, below the residual tolerance (the band is widened where ``κ`` is larger, so
        that it stays so), and it adds nothing to the gradients (at the gradient κ, 1e-4, such a contact's
        own contribution is about 1e-6 of the gradient's, well inside the centring tolerance).
        A left-out contact whose slack after the solve has fallen below half the band has the step
        solved again with every contact. 0 (or less): every contact is always solved. Only the first rung
        of the escalation ladder leaves contacts out (see ``ladder.Rung``).
    strict : bool
        Raise ``SimulationError`` instead of returning a degraded step (see
        :mod:`sim2real.physics.ladder`); recovered steps are returned either way.
    """

    residual_tol: float = 1e-9
    kappa_rtol: float = 1e-2
    gradient_kappa_rtol: float = 1e-3
    max_iterations: int = 100
    tau_min: float = 0.95
    tau_soc_max: float = 0.99
    backtrack: float = 0.5
    max_backtracks: int = 12
    continuation_kappa: float = 1e-4
    continuation_residual_tol: float = 1e-6
    continuation_kappa_rtol: float = 0.5
    gap_factor: float = 10.0
    gap_patience: int = 20
    resting_shortcut: bool = True
    resting_speed_tol: float = 1e-6
    resting_gap_tol: float = 1e-7
    resting_pusher_margin: float = 0.005
    resting_kappa_max: float = 1e-6
    skip_band: float = 0.03
    strict: bool = False
