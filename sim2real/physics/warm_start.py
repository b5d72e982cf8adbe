"""What a trajectory carries from one engine step to the next: the last step's contact solution.

Consecutive steps of a push solve nearly the same contact problem (the same corners touch, the
impulses change little), so the interior point started from the previous step's solution converges
in about a third of the iterations of a cold start. A :class:`WarmStart` belongs to one trajectory
(a rollout, a simulated trial, a stand-in run); pass the same object to every
:meth:`~sim2real.physics.world.BoxWorld.step` of it, and :meth:`WarmStart.reset` it (or use a new
one) when the state jumps (a new trial, a box placed by hand). A solve that does not converge from
the warm start is redone from the cold start inside the same compiled call, so a warm start changes
how long a step takes, never whether it converges; its answer agrees with the cold start's within
the solver's tolerance (the velocities of the forward solve to about 1e-7 m/s along a steady push; at
the instant a fast pusher strikes the box, where the answer is most sensitive to the tolerance, to
about 1e-4 rad/s).
"""

from __future__ import annotations

import numpy as np

from sim2real.physics import kernels


class WarmStart:
    """The previous step's solution of one trajectory (empty until a step has been solved).

    Attributes
    ----------
    buffer : ndarray (kernels.WARM_SIZE,)
        Contacts of the stored solution (0: none), its central-path value κ, and the iterate
        (velocities, normal and cone pairs; see :mod:`sim2real.physics.kernels`), read and written by
        the compiled step.
    """

    def __init__(self) -> None:
        self.buffer = np.zeros(kernels.WARM_SIZE)

    @property
    def holds_solution(self) -> bool:
        """A solved step is stored (the next step with the same contacts and κ starts from it)."""
        return self.buffer[kernels.W_CONTACTS] > 0.0

    def reset(self) -> None:
        """Forget the stored solution: the next step starts cold."""
        self.buffer[kernels.W_CONTACTS] = 0.0
