"""Simulation engines behind one interface (:class:`World`): ours (hard contact) and MuJoCo (soft contact)."""

from sim2real.engines.base import World
from sim2real.engines.registry import DEFAULT_ENGINE, ENGINES, check_engine, engine_names, make_world

__all__ = ["DEFAULT_ENGINE", "ENGINES", "World", "check_engine", "engine_names", "make_world"]
