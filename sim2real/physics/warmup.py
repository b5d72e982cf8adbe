"""Compile the engine's kernels ahead of time.

The engine's per-step core is compiled by numba on first use and cached on disk
(``__pycache__``). A process that steps physics next to a real-time duty (the reality
stand-in answering the xArm driver, the sim node) calls :func:`warm_up` at start-up, and
``make venv`` runs ``python -m sim2real.physics.warmup`` once so that no process pays the
compilation later.
"""

from __future__ import annotations

import time

import numpy as np

from sim2real.physics.state import BoxState
from sim2real.physics.world import BoxWorld


def warm_up(world: BoxWorld, pusher_radius: float, gradients: bool = False) -> None:
    """Step ``world`` with the pusher far and in contact (and with gradients), discarding the results.

    Parameters
    ----------
    world : BoxWorld
        The world to step (its box geometry is used; nothing is kept).
    pusher_radius : float
        Pusher sphere radius (m), to place it just touching the box.
    gradients : bool
        Also run a step with implicit gradients (compiles the gradient kernels).
    """
    half = np.asarray(world.half_size, dtype=float)
    box = BoxState.at_rest(np.array([0.5, 0.0, half[2]]), np.array([1.0, 0.0, 0.0, 0.0]))
    far = box.position - np.array([half[0] + pusher_radius + 0.2, 0.0, 0.0])
    touching = box.position - np.array([half[0] + pusher_radius, 0.0, 0.0])
    pushed = touching + np.array([0.003, 0.0, 0.0])
    world.step(box, far, far)
    world.step(box, touching, pushed)
    if gradients:
        world.step(box, touching, pushed, grad=True, param_names=("contact.mu_table",))


def main() -> None:
    """Compile every kernel and print how long it took."""
    from sim2real.params import ParameterSet

    params = ParameterSet.nominal()
    start = time.perf_counter()
    warm_up(BoxWorld.from_params(params), float(params["pusher.radius"]), gradients=True)
    print(f"sim2real engine kernels ready ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
