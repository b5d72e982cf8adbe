"""The engine written again in vectorised NumPy: a readable oracle the compiled kernels are tested against.

``dynamics`` (one step's contact data and the next-state map), ``geometry`` (closed-form contact
geometry) and ``solver`` (the primal-dual interior-point method) follow the same equations as
:mod:`sim2real.physics.kernels` in a different form (batched NumPy, not compiled loops); the tests
compare both on many states. Nothing in the package imports this.
"""
