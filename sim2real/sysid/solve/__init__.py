"""How a fit is solved: Levenberg-Marquardt with bounds and robust losses (``optimizer``; its damped step and
stopping rules in ``damped_step``, ``stopping``), many trials as one residual vector (``evaluation``), several
starts and the grid search (``starts``, ``multistart``), :func:`~sim2real.sysid.solve.fit.fit_trials` and its
:class:`~sim2real.sysid.solve.result.FitResult` (``fit``, ``result``). The modules are imported where used:
nothing is loaded with the package."""
