"""How a trial is compared with the simulator: the residual rows and their Jacobian from the implicit gradients
(``trial``: one-step, N-step segments, whole trials; ``types``: the spec, weights and results; ``arm_trials``:
whole arm trials simulated), and per-trial work as tasks any executor runs (``tasks``). The modules are
imported where used: nothing is loaded with the package."""
