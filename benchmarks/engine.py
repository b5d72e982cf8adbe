"""Per-step cost of the contact engine against MuJoCo on an equivalent box-push scene.

Scene: the nominal box (11 x 13 x 21 cm, 0.5 kg, μ_table 0.5) upright on the table, pushed along +x
at 5 cm/s by a kinematic 2 cm sphere 8 cm above the table, dt = 10 ms. Our solve always carries
all 9 contact constraints (8 corners + pusher); 5 of them touch (4 bottom corners + pusher).
MuJoCo (benchmark-only dependency) runs the same scene with an elliptic friction cone and a mocap
sphere; ``mjd_transitionFD`` gives its finite-difference one-step Jacobian.

Both engines of the toolkit are also timed through the one engine interface (``make_world``): a
step, a step with its Jacobian (ours implicit; MuJoCo central differences of the step, 5 MuJoCo steps
of 2 ms per 10 ms step), and a 100-step rollout with its sensitivities to two parameters (ours chained
implicit gradients; MuJoCo differences of whole rollouts).

Run: ``python -m benchmarks.engine --json`` (prints one JSON object; times are medians, ms).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

import numpy as np

from sim2real.params import ParameterSet
from sim2real.physics import DIFFERENTIABLE_PARAMS, BoxState, BoxWorld

SPEED = 0.05  # m/s
PUSH_HEIGHT = 0.08  # m
PARAMS = ParameterSet.nominal().replace({"contact.mu_table": 0.5, "pusher.radius": 0.02})


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def _our_scene() -> tuple[BoxWorld, BoxState, np.ndarray, np.ndarray]:
    world = BoxWorld.from_params(PARAMS)
    state = BoxState([0.4, 0.0, 0.105], [1, 0, 0, 0], [SPEED, 0.0, 0.0], [0.0, 0.0, 0.0])
    start = np.array([0.4 - 0.055 - 0.02 + 2e-4, 0.0, PUSH_HEIGHT])
    return world, state, start, start + np.array([SPEED * world.dt, 0.0, 0.0])


def _mujoco_scene():
    import mujoco

    xml = f"""
<mujoco>
  <option timestep="0.01" cone="elliptic" gravity="0 0 -9.81"/>
  <worldbody>
    <geom name="table" type="plane" size="2 2 0.1" friction="0.5 0.005 0.0001"/>
    <body name="box" pos="0.4 0 0.105">
      <freejoint/>
      <geom type="box" size="0.055 0.065 0.105" mass="0.5" friction="0.5 0.005 0.0001"/>
    </body>
    <body name="pusher" mocap="true" pos="{0.4 - 0.055 - 0.02 + 2e-4} 0 {PUSH_HEIGHT}">
      <geom type="sphere" size="0.02" friction="0.3 0.005 0.0001"/>
    </body>
  </worldbody>
</mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qvel[0] = SPEED
    for _ in range(20):  # settle into steady pushing
        data.mocap_pos[0, 0] += SPEED * model.opt.timestep
        mujoco.mj_step(model, data)
    return mujoco, model, data


def _interface_timings(engine: str, repeats: int) -> dict[str, object]:
    """One engine through :func:`sim2real.engines.make_world`: step, step + Jacobian, rollout + sensitivities."""
    from sim2real.engines import make_world
    from sim2real.physics import Sphere, rollout

    world = make_world(engine, PARAMS, Sphere(0.02))
    _, state, start, end = _our_scene()
    names = ("contact.mu_table", "contact.mu_pusher", "box.mass", "box.com_z")
    path = start + np.outer(np.arange(101) * SPEED * world.dt, [1.0, 0.0, 0.0])
    at_rest = BoxState.at_rest([0.4, 0.0, 0.105])
    return {
        "gradient_method": world.gradient_method,
        "step_forward_ms": _median_ms(lambda: world.step(state, start, end), repeats),
        "step_with_jacobian_4_params_ms": _median_ms(
            lambda: world.step(state, start, end, grad=True, param_names=names), max(3, repeats // 5)),
        "rollout_100_steps_ms": _median_ms(lambda: rollout(world, at_rest, path), 3),
        "rollout_100_steps_sensitivities_2_params_ms": _median_ms(
            lambda: rollout(world, at_rest, path, grad_names=names[:2]), 3),
    }


def run(repeats: int) -> dict[str, object]:
    world, state, start, end = _our_scene()
    forward = world.step(state, start, end)
    names = tuple(n for n in DIFFERENTIABLE_PARAMS if n != "pusher.radius")
    result: dict[str, object] = {
        "scene": "box 11x13x21 cm on table, sphere pusher in contact, dt 10 ms",
        "contacts_in_solve": 9,
        "contacts_touching": forward.contacts.active,
        "iterations_forward": forward.iterations,
        "step_forward_ms": _median_ms(lambda: world.step(state, start, end), repeats),
        "step_with_grad_ms": _median_ms(lambda: world.step(state, start, end, grad=True), repeats),
        "step_with_grad_and_10_params_ms": _median_ms(
            lambda: world.step(state, start, end, grad=True, param_names=names), repeats),
        "iterations_with_grad": world.step(state, start, end, grad=True).iterations,
    }
    result["engines"] = {"ours": _interface_timings("ours", repeats)}
    try:
        mujoco, model, data = _mujoco_scene()
    except ImportError:
        result["mujoco"] = "not installed"
        return result
    result["engines"]["mujoco"] = _interface_timings("mujoco", repeats)
    snapshot = mujoco.MjData(model)
    mujoco.mj_copyData(snapshot, model, data)

    def mj_step() -> None:
        mujoco.mj_copyData(data, model, snapshot)
        mujoco.mj_step(model, data)

    jac = np.zeros((2 * model.nv + model.na, 2 * model.nv + model.na))
    ctrl_jac = np.zeros((2 * model.nv + model.na, model.nu))

    def mj_fd() -> None:
        mujoco.mj_copyData(data, model, snapshot)
        mujoco.mjd_transitionFD(model, data, 1e-6, 1, jac, ctrl_jac, None, None)

    mujoco.mj_copyData(data, model, snapshot)
    mujoco.mj_forward(model, data)
    result.update({
        "mujoco_version": mujoco.__version__,
        "mujoco_contacts": int(data.ncon),
        "mujoco_step_ms": _median_ms(mj_step, repeats * 20),
        "mujoco_fd_jacobian_ms": _median_ms(mj_fd, repeats),
        "mujoco_fd_centered": True,
    })
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeats", type=int, default=50, help="timed repetitions per measurement")
    args = parser.parse_args(argv)
    result = run(args.repeats)
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:<34} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
