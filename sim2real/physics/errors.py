"""The engine's error type."""

from sim2real.errors import Sim2RealError


class SimulationError(Sim2RealError):
    """A step could not be solved (strict mode, or non-finite problem data); the message names the step."""
