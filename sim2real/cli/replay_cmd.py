"""``sim2real replay``: re-simulate recorded trials offline with the recorded commands and timing."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim2real.cli.common import (
    EXIT_FIT_PROBLEMS,
    EXIT_TRIALS_FAILED,
    add_engine_argument,
    add_executor_arguments,
    add_param_arguments,
    bounded_float,
    params_from_args,
    red,
)

if TYPE_CHECKING:
    from sim2real.sysid.prediction import ReplayResult
    from sim2real.sysid.problem import TrialFailure

EPILOG = """\
Modes (each needs topics; a trial without them is not replayed but named, with the missing
topic, never simulated with a stand-in such as the box alone):
  commands   the recorded joint commands drive the simulated arm (joint states + joint_command)
  closed     the PD law on the recorded reference drives it (joint states + reference)
  kinematic  the arm played back from the recorded joint states; the pusher from --pusher
  pusher     the pusher played back from the recorded /<ns>/pusher_pose
  auto       (default) commands, else closed, for trials with joint states; pusher for
             trials with only a pusher pose; box-only trials (cube tosses) are rolled out
             from their first recorded poses
--pusher recorded|arm: where a played-back pusher comes from (kinematic mode): the recorded
pusher pose, or xArm forward kinematics of the recorded joint states; default: the recorded
pose when the trial has one. Each trial's mode and pusher are printed and kept in its
trial.json ("mirror", "pusher").
--pusher-shape sphere|rod: the shape of a recorded pusher (a point probe is a vertical rod):
sphere (default) centred at the recorded position, or rod: a vertical capsule of radius
pusher.radius and straight length pusher.length, the recorded position being its tip (the
centre of its lower end point), its upper end point pusher.length above. The arm's pusher is
a sphere: a trial driven by the arm (simulated or FK) is not replayed with rod. Kept in
trial.json and run.json ("pusher_shape").

Solver: every trial.json holds the step outcome tally ("solver": {"sim": {steps, converged,
recovered, degraded, worst_residual, worst_complementarity, ...}}); hard steps (at most 20
per trial) are saved as OUT/<trial>/hard_steps/sim_step_<k>.json. --strict raises at the first step that
does not converge instead (exit 2, naming trial and step; nothing written).

Predicted spread (--spread FIT.json): each trial is also simulated whole under --draws parameter
sets drawn from the fit's uncertainty (as 'sim2real sample' draws them; a parameter the fit did
not determine is drawn uniformly within its bounds, and said so), each with the recorded start
moved by its measurement noise (--start-noise: auto, the default, measures it in each recording;
or MM,DEG: standard deviations of one pose's centre x and y, mm, and heading, deg). The outcome is
the final box centre x, y (m, base frame) and the yaw since the start (deg). The draws are grouped
into modes (a push that may turn either way, or flip or not, has two), each with its probability.
The band at --level (default 0.9) is each mode's box widened by the model's discrepancy and a
conformal quantile, calibrated on the fit's held-out trials (a fit run with --spread-draws and
--holdout or --validate keeps that calibration in its fit.json). A fit without one gives the
parameter-only band (the central share of the draws), said first as NOT CALIBRATED: it holds what
the parameters and the start leave open, not what the model gets wrong, and real outcomes fall
outside it more often than its level. The real outcome is inside when all three lie in some
mode's box. Printed per trial, summed up, and written to OUT/spread.json (the modes, both bands,
every draw's outcome); draws that fail are counted, never hidden. The report shows it as a figure.

Exit status: 0 every trial replayed (and with --spread: a calibrated band that holds the real
outcomes at its level); 1 some trials could not be replayed: each is named on stderr and in
OUT/run.json "failed", the others are written; 2 bad input or no trial could be replayed
(nothing written; --spread's file and options are checked before any replay); 3 with --spread,
everything written but the band is not calibrated, or it holds fewer real outcomes than its level
(one-sided binomial p < 0.05), said first.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``replay`` subcommand."""
    parser = subparsers.add_parser(
        "replay", help="re-simulate recorded trials (recorded commands and timing) into sim bags",
        description="Re-simulate recorded trials and write them as a run directory: each trial keeps the "
                    "recorded platform as 'real' and holds the replay as 'sim' (same topics and schema).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bags", nargs="+", metavar="BAG", help="trial or run directory")
    add_param_arguments(parser)
    parser.add_argument("--out", required=True, metavar="DIR", help="run directory to create (must not exist)")
    parser.add_argument("--mode", choices=("auto", "commands", "closed", "kinematic", "pusher"), default="auto",
                        help="what drives the replay (default auto; see below)")
    parser.add_argument("--pusher", choices=("auto", "recorded", "arm"), default="auto",
                        help="played-back pusher: recorded pusher pose or FK of the joint states "
                             "(default: recorded when present, else arm)")
    parser.add_argument("--pusher-shape", choices=("sphere", "rod"), default="sphere",
                        help="shape of a recorded pusher, for trials that carry none (trial.json \"object\" wins): "
                             "a sphere (default) of radius pusher.radius centred at "
                             "the recorded position, or a vertical rod of radius pusher.radius and length "
                             "pusher.length whose tip (lower end-point centre) is the recorded position")
    parser.add_argument("--platform", choices=("auto", "real", "sim"), default="auto",
                        help="recording that drives the replay (default: real if present, else sim)")
    parser.add_argument("--strict", action="store_true",
                        help="raise at the first solver step that does not converge (no degraded steps)")
    add_engine_argument(parser)
    spread = parser.add_argument_group("predictions as distributions (see below)")
    spread.add_argument("--spread", metavar="FIT_JSON", help="draw parameter sets from this fit (fit.json)")
    spread.add_argument("--draws", type=int, default=None, metavar="N",
                        help="parameter sets drawn (default: as many as the fit's band was calibrated with, else 30)")
    spread.add_argument("--start-noise", metavar="auto|MM,DEG", default=None,
                        help="measurement noise of one recorded pose: std of the box centre's x and y (mm) and "
                             "heading (deg), or auto: measured in each recording (default: what the fit's band was "
                             "calibrated with, else auto; another value is warned about)")
    spread.add_argument("--start-error", metavar="MM,DEG", default=None,
                        help="an error of each recorded start beyond its noise: std of its x and y (mm) and heading "
                             "(deg) (default: what the fit chose for its band, else none; another value is warned "
                             "about)")
    spread.add_argument("--level", type=bounded_float(0.0, 1.0, low_open=True, high_open=True), default=None,
                        metavar="P",
                        help="level of the predicted band, in (0, 1) (default 0.9)")
    spread.add_argument("--allow-unconverged", action="store_true",
                        help="draw from a fit that did not converge (its covariance does not describe a minimum)")
    spread.add_argument("--seed", type=int, default=None, help="seed of the draws and the start noise (default 0)")
    add_executor_arguments(parser, "the replay of the trials")
    parser.set_defaults(handler=run, uses_engine=True)


def _log(message: str, alarm: bool = False) -> None:
    print(f"replay: {red(message, sys.stderr) if alarm else message}", file=sys.stderr, flush=True)


def _replay_all(records: Any, sources: Any, args: argparse.Namespace,
                params: Any) -> tuple[list[ReplayResult], list[TrialFailure]]:
    """Replay every record on ``--executor``; failures are collected (strict mode: the first solver failure raises)."""
    from sim2real.errors import Sim2RealError
    from sim2real.execution import open_executor
    from sim2real.sysid.prediction import ReplayFailure, ReplayTask, run_replay_task
    from sim2real.sysid.problem import TrialFailure

    tasks = [ReplayTask(record, source, params, args.mode, args.platform, args.pusher, args.strict, args.pusher_shape,
                        args.engine)
             for record, source in zip(records, sources, strict=True)]
    done: list[ReplayResult] = []
    failed: list[TrialFailure] = []
    with open_executor(args.executor, args.workers, _log) as executor:
        if executor.label != "this process":
            _log(f"replaying {len(tasks)} trial(s) on {executor.label}")
        for result in executor.map(run_replay_task, tasks):
            if isinstance(result, ReplayFailure):
                if result.fatal:
                    raise Sim2RealError(result.reason, option=result.option)
                failed.append(TrialFailure(result.name, result.reason, result.source, result.stage, result.option))
                continue
            solve = result.solve.describe() if result.solve is not None else "no solver tally"
            degraded = result.solve is not None and result.solve.degraded > 0
            _log(f"{result.record.name} ({result.mode}; pusher: {result.pusher}): {solve}", alarm=degraded)
            done.append(result)
    return done, failed


def parse_start_noise(text: str) -> Any:
    """``--start-noise auto|MM,DEG``: :data:`~sim2real.sysid.prediction.spread.MEASURED`, or a
    :class:`~sim2real.sysid.prediction.spread.StartNoise` of two finite standard deviations >= 0 (one-line error)."""
    import math

    from sim2real.sysid.prediction import MEASURED, StartNoise

    if text.strip() == "auto":
        return MEASURED
    mm, deg = parse_mm_deg(text, "--start-noise", "auto or MM,DEG")
    return StartNoise(mm / 1000.0, math.radians(deg))


def parse_mm_deg(text: str, option: str, expected: str = "MM,DEG") -> tuple[float, float]:
    """``MM,DEG`` of ``option``: two finite standard deviations >= 0, mm and deg (one-line error otherwise)."""
    import math

    from sim2real.errors import InputError

    try:
        mm, deg = (float(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"{option} '{text}': expected {expected} (two numbers)") from None
    if not (mm >= 0 and deg >= 0 and math.isfinite(mm + deg)):
        raise InputError(f"{option} '{text}': standard deviations must be finite and >= 0")
    return mm, deg


def noise_description(noise: Any) -> dict[str, Any]:
    """The start noise as a spread record keeps it."""
    import math

    from sim2real.sysid.prediction import StartNoise

    if isinstance(noise, StartNoise):
        return {"measured": False, "position_mm": 1000.0 * noise.position_m, "yaw_deg": math.degrees(noise.yaw_rad)}
    return {"measured": True}


@dataclass(frozen=True)
class SpreadInputs:
    """What ``replay --spread`` needs, read and checked before any replay."""

    dist: Any
    calibration: Any
    noise: Any
    start_error: Any  # StartError


#: The spread options of ``replay`` and their defaults (given without ``--spread``, each is an error).
SPREAD_DEFAULTS: dict[str, Any] = {"draws": 30, "start_noise": "auto", "start_error": "0,0", "level": 0.9, "seed": 0}


def check_spread(args: argparse.Namespace) -> SpreadInputs | None:
    """Read and check ``--spread`` and its options before any work (None without ``--spread``); options of
    a spread given without it are an error."""
    from sim2real.errors import Sim2RealError
    from sim2real.sysid.files import read_fit_document
    from sim2real.sysid.prediction import fit_calibration, fit_distribution

    given = [f"--{name.replace('_', '-')}" for name in SPREAD_DEFAULTS if getattr(args, name) is not None]
    if args.spread is None:
        if given or args.allow_unconverged:
            raise Sim2RealError(f"{', '.join(given) or '--allow-unconverged'} given without --spread FIT_JSON")
        return None
    if args.draws is not None and args.draws < 2:
        raise Sim2RealError(f"--draws {args.draws}: a spread needs at least 2 draws")
    if args.start_noise is not None:
        parse_start_noise(args.start_noise)  # a bad value is refused before the fit file is read
    if args.start_error is not None:
        parse_start_error(args.start_error)
    document = read_fit_document(args.spread)
    calibrated = _calibrated_with(document, str(args.spread))
    for name, default in SPREAD_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, calibrated.get(name, default))
    noise = parse_start_noise(args.start_noise)
    dist = fit_distribution(document, str(args.spread), allow_unconverged=args.allow_unconverged,
                            allow_undetermined=True)
    calibration = fit_calibration(document, str(args.spread), args.level)
    if calibration is not None and "start_noise" in calibrated and not _same_noise(noise, calibrated["start_noise"]):
        _log(f"WARNING: the band was calibrated with --start-noise {calibrated['start_noise']}; these draws use "
             f"{args.start_noise}: the discrepancy it carries was measured beyond other draws, so its level may not "
             "hold", alarm=True)
    start_error = parse_start_error(args.start_error)
    if calibration is not None and start_error != parse_start_error(calibrated.get("start_error", "0,0")):
        _log(f"WARNING: the band was calibrated with a start error of {calibrated.get('start_error', '0,0')} (mm,deg); "
             f"these draws use {args.start_error}: its level may not hold", alarm=True)
    return SpreadInputs(dist, calibration, noise, start_error)


def _fit_base(args: argparse.Namespace, inputs: SpreadInputs) -> Any:
    """``--spread`` without ``--params``: the parameters the fit did not fit (its ``--set`` values, the object it
    wrote) from the fit's own params YAML (:func:`sim2real.cli.sample_cmd.base_params`, checked against fit.json),
    ``--set`` on top; the nominal ones, said as a warning, when the fit has no params file next to it."""
    from sim2real.cli.sample_cmd import fit_params_file
    from sim2real.errors import Sim2RealError
    from sim2real.params import resolve_params

    try:
        path = fit_params_file(Path(args.spread), inputs.dist)
    except Sim2RealError:
        _log(f"WARNING: {args.spread} has no params file next to it: the parameters it did not fit are the nominal "
             "ones (and --set); give the fit's with --params FILE", alarm=True)
        return params_from_args(args)
    from sim2real.cli.sample_cmd import base_params

    base_params(argparse.Namespace(params=None, fit=args.spread), inputs.dist)  # refuses another fit's file
    _log(f"the parameters not drawn from the fit: {path} (the fit's params file)"
         + (" and --set" if args.overrides else ""))
    return resolve_params(str(path), args.overrides)


def parse_start_error(text: str) -> Any:
    """``--start-error MM,DEG``: a :class:`~sim2real.sysid.prediction.spread.StartError` of two finite standard
    deviations >= 0 (one-line error)."""
    import math

    from sim2real.sysid.prediction import StartError

    mm, deg = parse_mm_deg(text, "--start-error")
    return StartError(mm / 1000.0, math.radians(deg))


def _same_noise(noise: Any, text: str) -> bool:
    """Whether ``noise`` is the start noise ``text`` gives, to within its printed digits."""
    import math

    mine, theirs = noise_description(noise), noise_description(parse_start_noise(text))
    if mine["measured"] or theirs["measured"]:
        return bool(mine["measured"] and theirs["measured"])
    return all(math.isclose(mine[k], theirs[k], rel_tol=1e-5, abs_tol=1e-9) for k in ("position_mm", "yaw_deg"))


def _calibrated_with(document: Any, source: str) -> dict[str, Any]:
    """The draws and start noise (as ``--draws`` and ``--start-noise`` take them) of the spread a fit.json's band
    was calibrated on (``validation.spread``); empty without one."""
    spread = (document.validation or {}).get("spread")
    if not isinstance(spread, dict):
        return {}
    out: dict[str, Any] = {}
    if isinstance(spread.get("draws"), int) and not isinstance(spread.get("draws"), bool) and spread["draws"] >= 2:
        out["draws"] = spread["draws"]
    noise = spread.get("start_noise")
    if isinstance(noise, dict) and noise.get("measured") is True:
        out["start_noise"] = "auto"
    elif isinstance(noise, dict) and all(isinstance(noise.get(k), (int, float)) for k in ("position_mm", "yaw_deg")):
        out["start_noise"] = f"{noise['position_mm']:g},{noise['yaw_deg']:g}"
    if "start_error" in spread:
        from sim2real.sysid.prediction import StartError

        try:
            error = StartError.from_dict(spread["start_error"]).as_dict()
        except ValueError as err:
            from sim2real.errors import DataError

            raise DataError(f"{source}: validation.spread.start_error: {err}") from None
        out["start_error"] = f"{error['position_mm']:g},{error['yaw_deg']:g}"
    return out


def _spread(args: argparse.Namespace, inputs: SpreadInputs | None, records: Any, params: Any) -> dict[str, Any] | None:
    """The predicted spread of every trial under draws from ``--spread`` (None without the option)."""
    if inputs is None:
        return None
    _log(f"predicted spread: {len(records)} trial(s) x {args.draws} draws from {args.spread}")
    record = predict_fit_spread(args, inputs.dist, params, records, args.draws, inputs.noise, str(args.spread),
                                _log, calibration=inputs.calibration, start_error=inputs.start_error)
    return record


def spread_settings(args: argparse.Namespace) -> Any:
    """The :class:`~sim2real.sysid.prediction.spread.SpreadSettings` of ``replay`` or ``fit`` options."""
    from sim2real.sysid.prediction import SpreadSettings

    return SpreadSettings(args.mode, args.pusher, args.pusher_shape, args.engine, args.platform, args.executor,
                          args.workers, args.seed, args.level)


def predict_fit_spread(args: argparse.Namespace, dist: Any, params: Any, records: Any, draws: int,
                       noise: Any, source: str, log: Any, calibration: Any = None,
                       self_calibrate: bool = False, start_error: Any = None) -> dict[str, Any]:
    """Each record's spread under ``draws`` parameter sets from ``dist`` (a fit's distribution), started
    with ``noise`` (:func:`parse_start_noise`) as ``args`` say (:func:`spread_settings`), its band
    calibrated by ``calibration`` or (``self_calibrate``) on these records
    (:func:`sim2real.sysid.prediction.spread_calibration.records_spread`), logged per trial through ``log``. Shared by
    ``replay --spread`` and ``fit --spread-draws``."""
    from sim2real.sysid.prediction import records_spread

    record = records_spread(records, dist, params, draws, noise, noise_description(noise), source,
                            spread_settings(args), _log, calibration, self_calibrate, start_error)
    log_spread(log, record)
    return record


def log_spread(log: Any, record: dict[str, Any]) -> None:
    """One line per trial of a spread record (what the band is first, the undetermined parameters, the modes)."""
    if record["calibration"] is None:
        log("the band is NOT CALIBRATED: it holds the draws (parameters and start) only, no model discrepancy; "
            "a fit run with --spread-draws on held-out trials (--holdout or --validate) or with --cross-fit K "
            "calibrates it", alarm=True)
    if record["uniform"]:
        log(f"not determined by the fit, drawn uniformly within their bounds: {', '.join(record['uniform'])}",
            alarm=True)
    for entry in record["trials"]:
        coords = ", ".join(f"{k} real {v['real']:.4g} band [{_fmt(v['band'][0])}, {_fmt(v['band'][1])}]"
                           for k, v in entry["outcome"].items())
        failed = f"; {entry['failed_draws']} draw(s) failed" if entry["failed_draws"] else ""
        modes = entry["modes"]
        split = (f"; {len(modes)} modes (" + ", ".join(
            f"p {m['probability']:.2f} at yaw {m['yaw_deg']['centre']:.3g} deg" for m in modes) + ")"
                 if len(modes) > 1 else "")
        verdict = {True: "inside", False: "OUTSIDE", None: "no working draw"}[entry["inside"]]
        log(f"{entry['trial']}: {verdict}: {coords}{split}{failed}", alarm=entry["inside"] is not True)
    print(record["summary"])


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _write(out: Path, done: list[ReplayResult], run_meta: dict[str, Any],
           spread: dict[str, Any] | None = None) -> int:
    """Write the replayed trials, their hard steps, run.json (and spread.json) into ``out`` (all at once)."""
    import os
    import shutil

    from sim2real.filemodes import staging_dir
    from sim2real.sim import save_hard_steps
    from sim2real.trials import write_run_meta, write_trial

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = staging_dir(out.parent, prefix=f".{out.name}.", suffix=".partial")  # the umask's mode, not 0700
    hard_count = 0
    try:
        for result in done:
            trial_dir = write_trial(tmp, result.record)
            if result.hard_steps:
                hard_count += len(save_hard_steps(trial_dir / "hard_steps", result.hard_steps, prefix="sim_"))
        write_run_meta(tmp, run_meta)
        if spread is not None:
            from sim2real.sysid.prediction import SPREAD_JSON
            from sim2real.trials.jsonio import write_json_atomic

            write_json_atomic(tmp / SPREAD_JSON, spread)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return hard_count


def _log_scene_flags(records: Any) -> None:
    """One line per trial imported with ``--force`` although its scene is not physical (it is replayed all the
    same: the simulation shows what such a start does)."""
    from sim2real.trials.scene_checks import flagged_trials

    for name, problems in flagged_trials(records):
        _log(f"{name}: imported with --force although its scene is not physical: {'; '.join(problems)}", alarm=True)


def run(args: argparse.Namespace) -> int:
    """Handler of ``sim2real replay``: replay every trial, write the ones that worked, name the others."""
    from sim2real.cli.common import check_output_location, removed_on_interrupt
    from sim2real.errors import Sim2RealError
    from sim2real.sysid.problem import check_unique_names, raise_all_failed, read_trials

    out = check_output_location(args.out)
    if out.exists():
        raise Sim2RealError(f"output directory {out} already exists; choose a new one")
    params = params_from_args(args)
    inputs = check_spread(args)
    if inputs is not None and args.params is None:
        params = _fit_base(args, inputs)
    loaded = read_trials(args.bags)
    check_unique_names(loaded.records)
    _log_scene_flags(loaded.records)
    done, failed = _replay_all(loaded.records, loaded.sources, args, params)
    failures = list(loaded.failures) + failed
    if not done:
        raise_all_failed(failures, "no trial could be replayed")
    for failure in failures:
        _log(f"FAILED {failure.line()}", alarm=True)
    replayed = {r.record.name for r in done}
    spread = _spread(args, inputs, [record for record in loaded.records if record.name in replayed], params)
    with removed_on_interrupt(out):
        hard_count = _write(out, done, {
            "mode": "replay", "mirror": args.mode, "pusher": args.pusher,
            "pusher_shape": args.pusher_shape, "engine": args.engine, "strict": args.strict,
            "sources": list(loaded.sources),
            "params": params.as_dict(), "params_file": args.params, "failed": [f.as_dict() for f in failures]},
            spread)
    degraded = sum(r.solve.degraded for r in done if r.solve is not None)
    print(f"wrote {len(done)} replayed trial(s) to {out}")
    if degraded:
        print(red(f"{degraded} degraded solver step(s) in the replay; {hard_count} hard step(s) saved under "
                  f"{out}/<trial>/hard_steps/", sys.stdout))
    if failures:
        print(red(f"{len(failures)} trial(s) not replayed:", sys.stdout))
        for failure in failures:
            print(red(f"  {failure.line()}", sys.stdout))
        return EXIT_TRIALS_FAILED
    return EXIT_FIT_PROBLEMS if spread is not None and band_problem(spread) else 0


def band_problem(record: dict[str, Any]) -> str | None:
    """Why a spread's band cannot be taken at its word: not calibrated, or it holds fewer real outcomes
    than its level (one-sided binomial p < 0.05); None when neither."""
    from sim2real.sysid.prediction import misses_level

    if record["calibration"] is None:
        return "the predicted band is not calibrated (parameter-only)"
    if not record["calibrated"]:
        return "the predicted band's calibration has too few trials for its level"
    p = misses_level(record["inside"], record["judged"], record["level"])
    if p is not None:
        return (f"the calibrated {100 * record['level']:g} % band holds {record['inside']} of {record['judged']} real "
                f"outcomes, fewer than its level (binomial p = {p:.2g})")
    return None
