"""Physical constants of the simulated world (SI units), the same for every engine."""

from __future__ import annotations

GRAVITY = 9.81
"""Standard gravity, m/s², along world -z."""
