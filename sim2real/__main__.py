"""``python -m sim2real`` runs the command-line interface."""

import sys

from sim2real.cli import main

sys.exit(main())
