"""The demo (``sim2real demo``, ``make demo``) below the CLI: the whole sim-to-real loop on the embedded
default, without hardware. :mod:`~sim2real.demo.checks` holds its pushes, stages and checks;
the CLI (:mod:`sim2real.cli.demo_cmd`) parses the options and prints the progress and the verdict.
"""
