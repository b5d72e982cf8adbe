"""Parts of :mod:`benchmarks.robustness`: the tally of a family of cases, and the re-contact family.

Not benchmarks themselves: ``make bench`` runs the modules directly under ``benchmarks/`` only.
"""
