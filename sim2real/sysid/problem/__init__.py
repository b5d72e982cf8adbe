"""What a fit is asked: the recorded trials on the simulator's grid (``data``), what drives the simulator in
each (``inputs``: mode, pusher source, shape), the unknowns (``free``: free names, ties, bounds, the start;
``objects``: per-object values and the Jacobian's :class:`~sim2real.sysid.problem.objects.ColumnMap`), the
question itself (``fit_problem``: :class:`~sim2real.sysid.problem.fit_problem.FitProblem`) and the trials read
tolerantly (``runs``). The modules are imported where used: nothing is loaded with the package."""
