"""What a fit predicts: recorded trials simulated again (``replay``), whole-trial prediction errors
(``whole_trials``), the standard push simulated (``standard_trial``) and swept over parameter sets and start
distances (``sweep``), parameter sets drawn from a fit (``sampling``), trials predicted as distributions under
them (``spread``) with their modes, model discrepancy and calibrated bands (``bands``, ``spread_calibration``),
and engines compared on held-out trials (``compare``). The modules are imported where used: nothing is loaded
with the package."""
