"""One named layout of θ (sim2real.physics.layout): the kernels and the NumPy oracle (tests/oracle) read θ only
through it, so reordering THETA_PARAMS changes no result.

The reordering test runs one contact step with gradients in two fresh interpreters, one with the
parameters of θ in their order and one with them reversed (the layout module loaded from its source
with the tuple reversed, the kernels run as Python with NUMBA_DISABLE_JIT=1): the next state and
every derivative by name agree. A kernel or reference line that reads a parameter by a bare offset
reads the wrong parameter in the reversed run and fails this test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from sim2real.physics import layout

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys, types
from pathlib import Path
path = Path(sys.argv[1])
source = path.read_text()
if sys.argv[2] == "reversed":
    start = source.index("THETA_PARAMS: tuple[str, ...] = (")
    end = source.index(")", source.index("box.edge_radius", start)) + 1
    names = eval(source[start:end].split("=", 1)[1])
    source = source[:start] + f"THETA_PARAMS: tuple[str, ...] = {tuple(reversed(names))!r}" + source[end:]
module = types.ModuleType("sim2real.physics.layout")
module.__file__ = str(path)
sys.modules["sim2real.physics.layout"] = module
exec(compile(source, str(path), "exec"), module.__dict__)
import numpy as np
from sim2real.params import ParameterSet
from sim2real.physics import BoxWorld
from sim2real.sim import BoxState
from sim2real.spatial import from_axis_angle
params = ParameterSet.nominal().replace({"contact.mu_table": 0.45, "contact.mu_pusher": 0.3, "box.com_x": 0.01,
                                         "box.com_y": -0.008, "box.com_z": -0.02, "contact.support_ratio": 0.7,
                                         "box.edge_radius": 0.004, "box.inertia_scale": 1.1})
state = BoxState([0.4, 0.0, 0.105], from_axis_angle([0.0, 0.0, 1.0], 0.3), [0.2, 0.05, 0.0], [0.0, 0.0, 0.4])
centre = np.array([0.4, 0.0, 0.105]) + np.array([-0.075, 0.01, -0.02])
names = sorted(module.THETA_PARAMS)
result = BoxWorld.from_params(params).step(state, centre, centre + [0.003, 0.0, 0.0], grad=True, param_names=names)
print(json.dumps({"order": list(module.THETA_PARAMS), "state": result.state.as_vector().tolist(),
                  "d_params": {n: result.d_params[:, k].tolist() for k, n in enumerate(names)},
                  "d_state": result.d_state.tolist()}))
"""


def _step(order: str) -> dict:
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT / "sim2real" / "physics" / "layout.py"), order],
                          env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_named_slot_is_its_parameter_in_theta_params() -> None:
    for name in layout.THETA_PARAMS:
        assert layout.slot(name) == layout.PARAMS_OFFSET + layout.THETA_PARAMS.index(name)
    named = [layout.MASS, layout.SIZE_X, layout.SIZE_Y, layout.SIZE_Z, layout.COM_X, layout.COM_Y, layout.COM_Z,
             layout.MU_TABLE, layout.MU_PUSHER, layout.TABLE_HEIGHT, layout.PUSHER_RADIUS, layout.INERTIA_SCALE,
             layout.SUPPORT_RATIO, layout.EDGE_RADIUS]
    assert sorted(named) == list(range(layout.PARAMS_OFFSET, layout.THETA_SIZE))  # each parameter named once
    assert [int(j) for j in np.flatnonzero(layout.GEOMETRY_PARAM_COLUMN)] == sorted(
        layout.slot(n) for n in layout.GEOMETRY_PARAMS)


def test_the_kernels_and_the_reference_read_theta_only_through_named_slots() -> None:
    bare = re.compile(r"theta\[\s*(\.\.\.,\s*)?\d|_P \+|theta\[_P\]|PARAMS_OFFSET\s*\+\s*\d")
    kernels = sorted((ROOT / "sim2real" / "physics" / "kernels").glob("*.py"))
    paths = [*kernels, ROOT / "tests" / "oracle" / "dynamics.py"]
    assert len(paths) >= 7
    for path in paths:
        found = [f"{path.name}:{k}: {line.strip()}" for k, line in enumerate(path.read_text().splitlines(), 1)
                 if bare.search(line)]
        assert not found, found


def test_reordering_theta_params_changes_no_step_and_no_derivative() -> None:
    straight, reverse = _step("straight"), _step("reversed")
    assert reverse["order"] == straight["order"][::-1]
    np.testing.assert_allclose(reverse["state"], straight["state"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(reverse["d_state"], straight["d_state"], rtol=1e-9, atol=1e-12)
    for name, column in straight["d_params"].items():
        np.testing.assert_allclose(reverse["d_params"][name], column, rtol=1e-9, atol=1e-12, err_msg=name)
