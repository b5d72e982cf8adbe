"""sim2real: sim-to-real toolkit for a UFactory xArm 6 pushing a box.

Layers (a module imports only from layers listed before it), see DESIGN.md:
``params`` → ``spatial`` → ``model`` → ``physics`` → ``control`` → ``hardware`` →
``trials`` → ``sysid`` → ``report`` → ``nodes`` → ``cli``.
"""

__version__ = "0.1.0"
