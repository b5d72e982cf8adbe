"""Compile the engine's kernels ahead of time, and say so when it happens.

The engine's per-step core is compiled by numba on first use and cached on disk (numba's cache
beside the kernels' source, ``__pycache__``). A process that steps physics next to a real-time
duty (the reality stand-in answering the xArm driver, the sim node) calls :func:`warm_up` at
start-up; ``make venv`` runs ``python -m sim2real.physics.warmup`` once so that no process pays
the compilation later; every ``sim2real`` command that steps the engine calls
:func:`compile_with_progress` first, which says what it is doing when the cache is missing or
stale (after an install or an upgrade), instead of a silent pause of minutes.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from sim2real.physics.world import BoxWorld
from sim2real.sim.state import BoxState


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
    box, far, _ = _resting_box_and_far_pusher(world, pusher_radius)
    touching = box.position - np.array([half[0] + pusher_radius, 0.0, 0.0])
    pushed = touching + np.array([0.003, 0.0, 0.0])
    world.step(box, far, far)
    world.step(box, touching, pushed)
    _advance(world, box, touching, pushed, ())
    if gradients:
        world.step(box, touching, pushed, grad=True, param_names=("contact.mu_table",))
        _advance(world, box, touching, pushed, ("contact.mu_table",))


def _advance(world: BoxWorld, box: BoxState, start: np.ndarray, end: np.ndarray, names: tuple[str, ...]) -> None:
    """Two steps through ``world.advance`` (the compiled loop of rollouts and fits), with ``names``'
    sensitivities and the start's."""
    from sim2real.sim.trajectory import Trajectory

    traj = Trajectory.empty(2, np.array([start, end, 2.0 * end - start]), names, initial_grad=bool(names))
    traj.states[0] = box.as_vector()
    world.advance(traj, 0, 2)


def kernels_cached() -> bool:
    """Whether numba's on-disk cache holds a current compilation of every engine kernel.

    False when any kernel has no cache index or one written for another version of its source
    (numba then compiles it on first use). Reads numba's cache index through the dispatcher's
    cache object (numba is pinned); if that cannot be read, the answer is False (announce).
    """
    from sim2real.physics import kernels

    dispatchers = [v for stage in kernels.STAGES for v in vars(stage).values()
                   if hasattr(v, "py_func") and hasattr(v, "_cache") and v.py_func.__module__ == stage.__name__
                   and v.targetoptions.get("inline") != "always"]  # inlined ones are compiled into their callers
    try:
        return bool(dispatchers) and all(d._cache._cache_file._load_index() for d in dispatchers)
    except Exception:  # a numba internal changed: announce rather than stay silent
        return False


def compile_with_progress(say: Callable[[str], None] | None = None) -> bool:
    """Compile the engine's kernels now, with a line per stage, if the cache is missing or stale.

    Parameters
    ----------
    say : callable, optional
        Receives each progress line (default: print to stderr).

    Returns
    -------
    bool
        True when it compiled, False when the cache was current (nothing printed).
    """
    if kernels_cached():
        return False
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    from sim2real.params import ParameterSet

    say("sim2real: compiling the engine's kernels (numba; once after an install or upgrade, "
        "about 1-5 minutes; later runs load them from the cache)")
    params = ParameterSet.nominal()
    world = BoxWorld.from_params(params)
    radius = float(params["pusher.radius"])
    start = time.perf_counter()
    say("sim2real: [1/2] the forward step (free and in contact) ...")
    warm_up(world, radius)
    say("sim2real: [2/2] implicit gradients ...")
    warm_up(world, radius, gradients=True)
    say(f"sim2real: engine kernels compiled and cached ({time.perf_counter() - start:.0f} s)")
    return True


def _resting_box_and_far_pusher(world: BoxWorld, radius: float) -> tuple[BoxState, np.ndarray, np.ndarray]:
    """A box at rest and a pusher 0.2 m clear of it (no contact), as ``world.step`` takes them."""
    half = np.asarray(world.half_size, dtype=float)
    box = BoxState.at_rest(np.array([0.5, 0.0, half[2]]), np.array([1.0, 0.0, 0.0, 0.0]))
    far = box.position - np.array([half[0] + radius + 0.2, 0.0, 0.0])
    return box, far, far


def main() -> None:
    """Compile every kernel (with progress when the cache is not current) and print how long it took."""
    from sim2real.params import ParameterSet

    compile_with_progress(lambda line: print(line, flush=True))
    params = ParameterSet.nominal()
    start = time.perf_counter()
    warm_up(BoxWorld.from_params(params), float(params["pusher.radius"]), gradients=True)
    print(f"sim2real engine kernels ready ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
