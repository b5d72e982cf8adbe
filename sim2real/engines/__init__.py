"""Simulation engines behind one interface (:class:`World`): ours (hard contact) and MuJoCo (soft contact).

The registry (names, capabilities) imports no engine: :class:`World` and the engines' modules load
when first used, so that naming engines (``--help``, argument checks) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sim2real.engines.registry import ENGINES, Engine, check_engine, differentiable, engine, make_world

if TYPE_CHECKING:
    from sim2real.engines.base import World

__all__ = ["ENGINES", "Engine", "World", "check_engine", "differentiable", "engine", "make_world"]


def __getattr__(name: str) -> Any:
    if name == "World":
        from sim2real.engines.base import World

        return World
    raise AttributeError(f"module 'sim2real.engines' has no attribute '{name}'")
