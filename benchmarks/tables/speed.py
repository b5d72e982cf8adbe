"""Speed tables: the engine step and Jacobian against MuJoCo, the trial, the fit's iterations, scaling out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from benchmarks.tables.format import earlier, md_table, ms, num, with_provenance
from benchmarks.tables.store import load


def _cold_steps(ours: Mapping[str, Any]) -> str:
    """The cold-start figures of ``benchmarks.engine`` (steps not started from the previous solution), if stored."""
    if "step_cold_ms" not in ours:
        return ""
    return (f", each step started from the previous one's solution; started cold (one `BoxWorld.step` call "
            f"each): {ms(ours['step_cold_ms'])} / "
            f"{ms(ours['step_with_jacobian_cold_ms'])}, {num(ours['iterations_forward_cold']['median'])} / "
            f"{num(ours['iterations_with_jacobian_cold']['median'])} iterations; warm and cold next states differ by "
            f"at most {ours['warm_minus_cold_state_max']:.1e}")


def _contacts(ours: Mapping[str, Any]) -> str:
    """How many contacts the engine's steps solve (far ones are left out) and how many touch."""
    touching = f"median {num(ours['contacts_touching_median'])} touching"
    if "contacts_in_solve_median" in ours:
        return (f"median {num(ours['contacts_in_solve_median'])} of the scene's {ours['contacts_in_scene']} contacts "
                f"in the solve, {touching}")
    return f"{ours['contacts_in_solve']} contacts in the solve, {touching}"


def _call_steps(ours: Mapping[str, Any]) -> str:
    """The per-call figures of ``benchmarks.engine`` (one Python ``BoxWorld.step`` per step), if stored."""
    if "step_call_ms" not in ours:
        return ""
    return (f"; one `BoxWorld.step` call from Python per step (warm): {ms(ours['step_call_ms'])} / "
            f"{ms(ours['step_call_with_jacobian_ms'])}")


def _step_ratios(ratios: Mapping[str, Any]) -> str:
    """The step's other ratios to ``mj_step``, if stored: one Python call per step, started cold."""
    parts = [f"{label} ×{num(ratios[key])}" for key, label in (("step_call_ours_over_mj_step", "one Python call"),
                                                               ("step_cold_ours_over_mj_step", "cold"))
             if key in ratios]
    return f" ({', '.join(parts)})" if parts else ""


def speed_rows() -> list[tuple[str, str, str, str]]:
    """Rows (benchmark, measure, result, target) of the speed table, from engine, trial and sysid."""
    rows: list[tuple[str, str, str, str]] = []
    engine = load("engine")
    if engine is not None:
        out = engine["output"]
        ours, mujoco, ratios = out.get("ours", {}), out.get("mujoco", {}), out.get("ratios", {})
        if "step_ms" in ours:
            rows.append(("`benchmarks.engine`", f"our step along a steady push ({ours['steps_timed']} steps "
                         "run in one `BoxWorld.advance`, the compiled loop of rollouts and fits; " + _contacts(ours)
                         + ")",
                         f"{ms(ours['step_ms'])} forward, {ms(ours['step_with_jacobian_ms'])} with the Jacobian "
                         f"(state and {ours['jacobian_parameters']} parameters; per call also the pusher); median "
                         f"{num(ours['iterations_forward']['median'])} / "
                         f"{num(ours['iterations_with_jacobian']['median'])} iterations" + _cold_steps(ours)
                         + _call_steps(ours), "≤ 1 ms"))
        if "step_ms" in mujoco:
            rows.append(("", f"MuJoCo {mujoco['mujoco_version']} ({mujoco['cone']} cone) on the same push: bare "
                         "`mj_step`, centred `mjd_transitionFD`",
                         f"{ms(mujoco['step_ms'])}, {ms(mujoco['fd_jacobian_centred_ms'])}; ours / MuJoCo: step "
                         f"×{num(ratios.get('step_ours_over_mj_step'))}"
                         + _step_ratios(ratios) + ", Jacobian "
                         f"×{num(ratios.get('jacobian_ours_over_mjd_transitionFD'))}",
                         "step ≤ ×3, Jacobian ≤ ×⅓ (issue 33)"))
        engines = out.get("engines") or {}
        cells = []
        for name, label in (("ours", "ours"), ("mujoco", "MuJoCo (5 × 2 ms steps, finite differences)")):
            e = engines.get(name)
            if isinstance(e, Mapping) and "step_forward_ms" in e:
                cells.append(f"{label}: {num(e['step_forward_ms'])} / {num(e['step_with_jacobian_4_params_ms'])} / "
                             f"{num(e['rollout_100_steps_ms'])} / "
                             f"{num(e['rollout_100_steps_sensitivities_2_params_ms'])} ms")
        if cells:
            rows.append(("", "both engines through the engine interface: step / step with a 4-parameter Jacobian / "
                         "100-step rollout / with sensitivities to 2 parameters", "; ".join(cells), "—"))
    trial = load("trial")
    if trial is not None:
        out = trial["output"]
        targets = out.get("targets", {})
        rows.append(("`benchmarks.trial`", f"standard arm trial ({out['steps']} steps of {num(1e3 * out['dt_s'])} ms, "
                     f"box at {num(out['distance_m'])} m)",
                     f"{num(out['trial_forward_s'])} s forward, {num(out['trial_with_grad_s'])} s with "
                     f"{len(out['grad_parameters'])} gradients{_real_time(out)}",
                     f"≤ {targets.get('trial_forward_s'):g} s, ≤ {targets.get('trial_with_grad_s'):g} s"
                     + (f"; with gradients ≥ {targets['real_time_factor_with_grad']:g}× real time (issue 33)"
                        if "real_time_factor_with_grad" in targets else "")))
    sysid = load("sysid")
    if sysid is not None:
        rows.extend(sysid_speed_rows(sysid["output"]))
    return rows


def _real_time(out: Mapping[str, Any]) -> str:
    """How many times faster than real time the trial ran, forward and with gradients, if measured."""
    if "real_time_factor_with_grad" not in out:
        return ""
    return (f" ({num(out['real_time_factor_forward'])}× and {num(out['real_time_factor_with_grad'])}× "
            "faster than real time)")


def sysid_speed_rows(out: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """The sysid benchmark's speed figures: the fit on standard trials and one trial's Jacobian."""
    rows = []
    if "fit_wall_s" in out:
        rows.append(("`benchmarks.sysid`", f"{out['fit_parameters']}-parameter fit on {out['fit_trials']} standard "
                     f"trials (horizon 1, at most {out['fit_iterations_max']} iterations, "
                     "`fit_trials`' default starts)",
                     f"{num(out['fit_wall_s'])} s; largest relative error {num(out['fit_max_relative_error'])}", "—"))
    if "jacobian_implicit_s" in out:
        rows.append(("", f"residuals and Jacobian of one trial ({out['jacobian_trial_steps']} steps)",
                     f"{num(out['jacobian_implicit_s'])} s implicit, {num(out['jacobian_central_fd_s'])} s central "
                     "differences", "—"))
    return rows


def speed_table() -> str | None:
    """benchmarks.engine, trial, sysid: the speed of a step, a trial and a fit."""
    rows = speed_rows()
    if not rows:
        return None
    table = md_table(("benchmark", "measure", "result (median)", "target"), rows)
    return with_provenance(table, "engine", "trial", "sysid")


def scale_table() -> str | None:
    """benchmarks.scale (not regenerated by default: several minutes)."""
    record = load("scale")
    if record is None:
        rows = [
            ("local, 1 worker", "93.8 s", "14.0 trials/s"),
            ("local, 2 workers", "49.0 s (×1.91, 0.96 per worker)", "29.8 trials/s (14.9 per worker)"),
            ("Ray, 2 CPUs", "64.9 s incl. 7.7 s runtime start (×1.45, 0.72 per worker)",
             "15.8 trials/s (7.9 per worker, start included)"),
        ]
        return (md_table(("executor", "cube-toss fit, all 570 tosses", "sweep of 200 standard pushes"), rows) + "\n\n"
                + earlier("One run on the 2-core machine."))
    return with_provenance("```json\n" + json.dumps(record["output"], indent=1)[:4000] + "\n```", "scale")


def optimizer_table() -> str | None:
    """benchmarks.sysid: our Levenberg-Marquardt against SciPy's trf on the same residuals and budget."""
    record = load("sysid")
    if record is None or "optimizer_comparison" not in record["output"]:
        return earlier(
            "On 5 standard pushes (3 parameters, horizon 1) both were exact in 6 simulations. On the 30 real cube "
            "tosses 0-29 (the cube-toss fit, horizon 40) they ended within 0.002 % of each other's cost: ours 94166.1 "
            "in 24 simulations, SciPy's trf 94167.3 in 31; cube sides 0.10588 m both, rounding 16.9 and 17.0 mm.")
    out = record["output"]
    rows = []
    for entry in out["optimizer_comparison"].values():
        for key, label in (("levenberg_marquardt", "ours (LM)"), ("scipy_trf", "SciPy trf")):
            run = entry.get(key)
            if not isinstance(run, Mapping):
                continue
            values = ", ".join(f"{name.split('.')[-1]} {num(v, 4)}" for name, v in run["values"].items())
            rows.append((entry["problem"] if key == "levenberg_marquardt" else "", label,
                         f"{num(entry['cost_start'], 6)} → {num(run['cost'], 6)}", run["evaluations"],
                         run["iterations"], f"{num(run['wall_s'])} s", values))
    table = md_table(("problem", "optimizer", "cost (start → final)", "simulations", "iterations", "wall",
                    "final values"), rows)
    verdict = f"Verdict of the benchmark: {out['optimizer_winner']} ({out['optimizer_winner_reason']})."
    return with_provenance(table + "\n\n" + verdict, "sysid")
