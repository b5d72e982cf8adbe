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

Both engines are timed along a steady push (each along its own trajectory, every step a different
state), per step; MuJoCo's state is set by assignment (qpos, qvel, qacc_warmstart, mocap), not by
``mj_copyData``, and that assignment's own time is subtracted; the interior-point iterations of our
steps and MuJoCo's solver iterations are reported per step (min, median, max). Our steps are timed as a
rollout takes them, each started from the previous step's solution (a ``WarmStart`` carried along, as
MuJoCo's ``qacc_warmstart``), and also cold (every step from the engine's own starting point); the
largest difference of a warm and a cold step's next state is reported. Our ``step_ms`` and
``step_with_jacobian_ms`` are per step of the whole push run through ``BoxWorld.advance`` (the compiled
loop that rollouts and fits use; with the Jacobian, d state / d (state, 13 parameters) chained along);
``step_call_*`` are per call of the Python ``BoxWorld.step`` (argument checks, the recovery ladder, result
objects included), as a controller stepping the world once per tick pays.

Run: ``python -m benchmarks.engine --json`` (prints one JSON object; times are medians of per-step
means over passes, ms; ratios from the same run).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

import numpy as np

from sim2real.params import ParameterSet
from sim2real.physics import DIFFERENTIABLE_PARAMS, BoxWorld, WarmStart
from sim2real.sim import BoxState
from sim2real.sim.trajectory import Trajectory

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
    from sim2real.sim import Sphere, rollout

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


#: Steps of the push along which both engines are timed (the first 20 settle into steady pushing).
TRAJECTORY_STEPS = 150


def _our_trajectory(world: BoxWorld, state: BoxState,
                    start: np.ndarray) -> list[tuple[BoxState, np.ndarray, np.ndarray]]:
    """``(state, pusher start, pusher end)`` of each step of the steady push, as our engine goes."""
    steps = []
    step = np.array([SPEED * world.dt, 0.0, 0.0])
    pusher = start
    for _ in range(TRAJECTORY_STEPS):
        steps.append((state, pusher, pusher + step))
        state = world.step(state, pusher, pusher + step).state
        pusher = pusher + step
    return steps


def _median_per_step_ms(fn: Callable[[int], object], count: int, repeats: int) -> float:
    """Median over ``repeats`` passes of the mean time per call of ``fn(k)``, k = 0..count-1, ms."""
    for k in range(count):  # warm-up pass
        fn(k)
    passes = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for k in range(count):
            fn(k)
        passes.append((time.perf_counter() - t0) / count)
    return 1e3 * float(np.median(passes))


def _warm_stepper(world: BoxWorld, trajectory: list[tuple[BoxState, np.ndarray, np.ndarray]],
                  **kwargs: object) -> Callable[[int], object]:
    """``fn(k)``: step ``k`` of the trajectory started from step ``k - 1``'s solution, as a rollout steps
    (one :class:`WarmStart` carried along; forgotten at ``k = 0``)."""
    warm = WarmStart()

    def step(k: int) -> object:
        if k == 0:
            warm.reset()
        return world.step(*trajectory[k], warm_start=warm, **kwargs)
    return step


def _ours_along(repeats: int) -> dict[str, object]:
    world, state, start, _ = _our_scene()
    trajectory = _our_trajectory(world, state, start)
    names = tuple(n for n in DIFFERENTIABLE_PARAMS if n != "pusher.radius")
    count = len(trajectory)
    warm, warm_grad = _warm_stepper(world, trajectory), _warm_stepper(world, trajectory, grad=True, param_names=names)
    forward = [warm(k) for k in range(count)]
    grads = [warm_grad(k) for k in range(count)]
    cold = [world.step(*trajectory[k]) for k in range(count)]
    cold_grads = [world.step(*trajectory[k], grad=True, param_names=names) for k in range(count)]
    state_change = max(float(np.max(np.abs(a.state.as_vector() - b.state.as_vector())))
                       for a, b in zip(forward, cold, strict=True))
    return {
        "steps_timed": count,
        "contacts_in_scene": 9,
        "contacts_in_solve_median": float(np.median([r.contacts.in_solve for r in forward])),
        "contacts_touching_median": float(np.median([r.contacts.active for r in forward])),
        "iterations_forward": _spread([r.iterations for r in forward]),
        "iterations_with_jacobian": _spread([r.iterations for r in grads]),
        "iterations_forward_cold": _spread([r.iterations for r in cold]),
        "iterations_with_jacobian_cold": _spread([r.iterations for r in cold_grads]),
        "warm_minus_cold_state_max": state_change,
        "jacobian_parameters": len(names),
        "step_ms": _median_run_per_step_ms(world, state, trajectory, (), repeats),
        "step_with_jacobian_ms": _median_run_per_step_ms(world, state, trajectory, names, max(1, repeats // 3)),
        "step_call_ms": _median_per_step_ms(warm, count, repeats),
        "step_call_with_jacobian_ms": _median_per_step_ms(warm_grad, count, max(1, repeats // 3)),
        "step_cold_ms": _median_per_step_ms(lambda k: world.step(*trajectory[k]), count, repeats),
        "step_with_jacobian_cold_ms": _median_per_step_ms(
            lambda k: world.step(*trajectory[k], grad=True, param_names=names), count, max(1, repeats // 3)),
    }


def _median_run_per_step_ms(world: BoxWorld, state: BoxState, trajectory: list[tuple[BoxState, np.ndarray, np.ndarray]],
                            names: tuple[str, ...], repeats: int) -> float:
    """Median over ``repeats`` runs of the whole push through ``world.advance`` (the compiled loop rollouts
    and fits use, one warm start carried along) of the time per step, ms; with ``names``, every step's
    Jacobian with respect to the state and those parameters chained along."""
    path = np.array([trajectory[0][1]] + [end for _, _, end in trajectory])
    count = len(trajectory)

    def run() -> Trajectory:
        traj = Trajectory.empty(count, path, names, initial_grad=bool(names))
        traj.states[0] = state.as_vector()
        world.advance(traj, 0, count)
        return traj

    run()  # warm-up
    passes = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        passes.append((time.perf_counter() - t0) / count)
    return 1e3 * float(np.median(passes))


def _spread(values: list[int]) -> dict[str, float]:
    return {"min": float(np.min(values)), "median": float(np.median(values)), "max": float(np.max(values))}


def _mujoco_along(repeats: int) -> dict[str, object]:
    """MuJoCo along its own steady push: the state (qpos, qvel, qacc_warmstart, mocap) is set by assignment
    before each timed ``mj_step`` (no ``mj_copyData``), so what is timed is the step itself."""
    mujoco, model, data = _mujoco_scene()
    states = []
    for _ in range(TRAJECTORY_STEPS):
        states.append((data.qpos.copy(), data.qvel.copy(), data.qacc_warmstart.copy(), data.mocap_pos.copy()))
        data.mocap_pos[0, 0] += SPEED * model.opt.timestep
        mujoco.mj_step(model, data)
    iterations, contacts = [], []

    def set_state(k: int) -> None:
        qpos, qvel, warm, mocap = states[k]
        data.qpos[:] = qpos
        data.qvel[:] = qvel
        data.qacc_warmstart[:] = warm
        data.mocap_pos[:] = mocap
        data.time = 0.0

    def step(k: int) -> None:
        set_state(k)
        mujoco.mj_step(model, data)

    for k in range(len(states)):
        step(k)
        iterations.append(int(data.solver_niter[0]))
        contacts.append(int(data.ncon))
    nx = 2 * model.nv + model.na
    jac, ctrl_jac = np.zeros((nx, nx)), np.zeros((nx, model.nu))

    def fd(k: int) -> None:
        set_state(k)
        mujoco.mjd_transitionFD(model, data, 1e-6, 1, jac, ctrl_jac, None, None)

    set_only = _median_per_step_ms(set_state, len(states), repeats)
    return {
        "mujoco_version": mujoco.__version__,
        "cone": "elliptic",
        "steps_timed": len(states),
        "contacts_median": float(np.median(contacts)),
        "iterations": _spread(iterations),
        "state_assignment_ms": set_only,
        "step_ms": _median_per_step_ms(step, len(states), repeats) - set_only,
        "fd_jacobian_centred_ms": _median_per_step_ms(fd, len(states), max(1, repeats // 3)) - set_only,
    }


def run(repeats: int) -> dict[str, object]:
    """Both engines along a steady push (per-step medians, one run), the ratios, and the interface timings."""
    result: dict[str, object] = {
        "scene": "box 11x13x21 cm on the table pushed at 5 cm/s by a 2 cm sphere, dt 10 ms; "
                 f"{TRAJECTORY_STEPS} steps of the push, each engine along its own trajectory",
        "ours": _ours_along(repeats),
    }
    result["engines"] = {"ours": _interface_timings("ours", repeats)}
    try:
        result["mujoco"] = _mujoco_along(repeats)
    except ImportError:
        result["mujoco"] = "not installed"
        return result
    result["engines"]["mujoco"] = _interface_timings("mujoco", repeats)
    ours, mj = result["ours"], result["mujoco"]
    result["ratios"] = {
        "step_ours_over_mj_step": ours["step_ms"] / mj["step_ms"],
        "step_call_ours_over_mj_step": ours["step_call_ms"] / mj["step_ms"],
        "step_cold_ours_over_mj_step": ours["step_cold_ms"] / mj["step_ms"],
        "jacobian_ours_over_mjd_transitionFD": ours["step_with_jacobian_ms"] / mj["fd_jacobian_centred_ms"],
        "jacobian_call_ours_over_mjd_transitionFD": ours["step_call_with_jacobian_ms"] / mj["fd_jacobian_centred_ms"],
        "note": "the same run; the Jacobian: ours d next state / d (state, all 13 parameters), implicit, chained "
                "through the compiled loop (per call: also the pusher placements), MuJoCo's centred finite "
                "differences of state and controls",
    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--repeats", type=int, default=9, help="timed passes along the trajectory (default 9)")
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
