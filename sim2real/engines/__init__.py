"""The engines by name (:data:`ENGINES`), what each can do, and :func:`make_world`: ours and MuJoCo's.

Every engine implements the contract of :mod:`sim2real.sim` (:class:`~sim2real.sim.world.World`). The
registry (names, capabilities) imports no engine: the engines' modules load when a world is first built,
so that naming engines (``--help``, argument checks) stays fast.
"""

from sim2real.engines.registry import ENGINES, Engine, check_engine, differentiable, engine, make_world

__all__ = ["ENGINES", "Engine", "check_engine", "differentiable", "engine", "make_world"]
