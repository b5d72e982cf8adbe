"""Simulation engines behind one interface (:class:`World`): ours (hard contact) and MuJoCo (soft contact)."""

from sim2real.engines.base import World
from sim2real.engines.registry import ENGINES, Engine, check_engine, differentiable, engine, make_world

__all__ = ["ENGINES", "Engine", "World", "check_engine", "differentiable", "engine", "make_world"]
