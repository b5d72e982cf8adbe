"""The engine's error type."""

from sim2real.errors import SolverError


class SimulationError(SolverError):
    """A step could not be solved (strict mode, or non-finite problem data); the message names the step."""
