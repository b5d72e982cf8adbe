"""What a fit knows of its own values, and its verdicts: covariance, intervals, correlations and
identifiability (``covariance``), the measured leave-one-out refits (``jackknife``), and converged or not with
the problems a user must see (``status``). The modules are imported where used: nothing is loaded with the
package."""
