"""Constants of our engine's contact model (SI units), shared by its compiled kernels and the tests' oracle.

Gravity, the same for every engine, is :data:`sim2real.sim.constants.GRAVITY`.
"""

from __future__ import annotations

#: Smallest friction coefficient used in the cone equation ``ξ₁ = μγ``: at μ = 0 the cone pair has no
#: interior, so frictionless contacts are simulated with this (negligible) friction instead.
MIN_FRICTION = 1e-5

#: Natural angular frequency of the box on its pusher contact, rad/s: the contact's normal stiffness
#: is ``k = m ω²`` (arm structure, pusher and box wall in series; 1.1e6 N/m for the 0.5 kg box). The
#: pusher is placed kinematically, so a perfectly rigid pusher that presses a box against the table
#: (e.g. passing over a box that has fallen on its side, 1-2 mm lower than its top) leaves the step
#: without any solution. With this stiffness the contact yields by ``force / k`` instead: the normal
#: row of the pusher contact reads ``s = Jn a + bn + γ / (k dt²)``. Steady pushing forces of a few
#: newtons compress it by micrometres, so ordinary pushes are unchanged for practical purposes.
#: Stiffness proportional to the mass (as MuJoCo's time-constant contacts) keeps the motion of a
#: kinematically pushed box independent of its mass, as with rigid contact (all impulses scale with m).
PUSHER_CONTACT_FREQUENCY = 1500.0

#: Width of the near-minimum band of a capsule segment, m (see ``kernels.segment_box_parameters``).
CONTACT_BAND = 1e-5
