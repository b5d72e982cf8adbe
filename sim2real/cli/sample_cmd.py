"""``sim2real sample``: parameter sets drawn from a fit's distribution (domain randomization)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim2real.cli.common import bounded_float, bounded_int, check_output_location

if TYPE_CHECKING:
    from sim2real.params import ParameterSet
    from sim2real.sysid.files import FitDocument
    from sim2real.sysid.prediction import BandCalibration, FitDistribution

#: Most sets one call writes.
MAX_SAMPLES = 100_000

EPILOG = """\
Writes into DIR (which must not exist, or be empty):
  sample_0000.yaml ...  one complete ROS 2 params file per set (for --params of simulate,
                        replay, sweep, the sim node): the fit's params YAML with the fitted
                        names replaced by the draw
  samples.csv           one row per set: sample, then the fitted parameter names
  samples.json          method, distribution, seed, inflate, fit file, object (--object), base params file,
                        accepted / rejected draws (per parameter), mean, std, correlation, bounds,
                        band_calibration: the fit's band calibration (fit.json
                        validation.spread.calibration: discrepancy tau, conformal scores),
                        or null, and band_note saying which

Band calibration. The sets hold the parameters' uncertainty only, not the model's discrepancy.
A fit run with --spread-draws on held-out trials keeps a band calibration; 'sample' copies it
into samples.json, 'sweep --samples DIR' into sweep.json, and 'report --sweep' widens the
predicted bands with it. Without one (said on stderr) those predictions are parameter-only.

Distribution. The mean is fit.json "values", the covariance diag(std) R diag(std) from its
"std" and "correlation" (one unknown per tied group: tied names follow their leader), with
every standard deviation multiplied by --inflate K (the covariance by K^2). Parameters the fit
did not fit keep the values of the fit's params YAML (the .yaml next to FIT.json, else its
"params_file"; --params FILE names another).

Which distribution: by default the multivariate normal, the large-sample distribution of a
least-squares estimate, whatever the fit's intervals used. A fit of two or more trials forms
its 95 % intervals (ci95) with Student's t, each parameter with the number of trials that inform
it less one (at most G-1 for G trials; fit.json data.uncertainty "dof", "clusters" and
"quantile"), because the covariance itself is estimated from those few trials: its ci95 is then
wider than +-1.96 std (with 2 trials 12.7 std, with 5 trials 2.78 std), and normal draws are
narrower than those intervals. 'sample' says so and by how much. --distribution t draws the
multivariate Student's t with the fewest of those dof (rounded down) and the same scale matrix
instead: each marginal's central 95 % then holds at least the fit's ci95 (before clipping to
the bounds), but with few trials its tails are very heavy (1 dof is a Cauchy distribution, with
no mean) and many draws can fall outside the bounds. Alternatively --inflate QUANTILE/1.96
widens the normal to the intervals' width with light tails.

Bounds: draws outside the registry bounds of any unknown (sim2real params lists them) are
rejected and drawn again, so the sets follow the distribution truncated to the bounds; the
counts are printed and kept in samples.json. Fewer than 1 % of draws inside (judged after at
least 1000 draws) is an error: the distribution then lies mostly outside the bounds.

The draws are a function of --seed (default: a random seed, printed and written to
samples.json) and of N (sets are taken in draw order, so a larger N extends a smaller one's
sets only when no draw was rejected).

Exit status: 0 written; 2 bad input (one line, nothing written): an existing non-empty DIR,
a fit that did not converge (unless --allow-unconverged), a fit.json that is not valid JSON,
has no free parameters or no covariance (a parameter not determined by the data), too few
draws inside the bounds.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``sample`` subcommand."""
    parser = subparsers.add_parser(
        "sample", help="draw parameter sets from a fit's distribution (domain randomization): params files + table",
        description="Draw N parameter sets from the distribution a fit reports (fitted values, standard "
                    "deviations, correlations in fit.json), within the registry bounds and with tied parameters "
                    "following their leader, and write each as a ROS 2 params file.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("fit", metavar="FIT.json", help="fit report written by 'sim2real fit' (next to its .yaml)")
    parser.add_argument("-n", dest="count", type=bounded_int(1, MAX_SAMPLES), required=True, metavar="N",
                        help=f"number of parameter sets (1 to {MAX_SAMPLES})")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory to create (or an empty one)")
    parser.add_argument("--inflate", type=bounded_float(0.0, 1e3, low_open=True), default=1.0, metavar="K",
                        help="multiply every standard deviation by K (default 1)")
    parser.add_argument("--seed", type=bounded_int(0, 2**32 - 1), metavar="S",
                        help="seed of the draws (default: random, printed and kept in samples.json)")
    parser.add_argument("--distribution", choices=("normal", "t"), default="normal",
                        help="normal (default) or the Student's t of the fit's intervals (see below)")
    parser.add_argument("--params", metavar="FILE",
                        help="values of the parameters the fit did not fit (default: the fit's params YAML)")
    parser.add_argument("--object", metavar="NAME",
                        help="a fit with per-object parameters (fit --per-object): sample the parameter sets of "
                             "this object's trials (the shared parameters and its own; the other parameters from "
                             "its params file, the fit's <stem>.<NAME>.yaml)")
    parser.add_argument("--allow-unconverged", action="store_true",
                        help="sample a fit that stopped at its iteration limit (its covariance then describes "
                             "where it stopped, not a minimum)")
    parser.set_defaults(handler=run)


def _log(message: str) -> None:
    print(f"sample: {message}", file=sys.stderr, flush=True)


def fit_params_file(fit: Path, dist: FitDistribution, obj: str | None = None) -> Path:
    """The fitted params YAML of fit report ``fit``: ``<stem>.yaml`` / ``.yml`` next to it, else its
    ``params_file`` (absolute, or relative to the current directory); for object ``obj`` of a per-object fit,
    that object's ``<stem>.<obj>.yaml``.

    Raises
    ------
    Sim2RealError
        None of them is a file.
    """
    from sim2real.errors import Sim2RealError

    candidates = [fit.with_suffix(".yaml"), fit.with_suffix(".yml")]
    if obj is not None:  # a per-object fit's object: its own params file (geometry and values)
        from sim2real.sysid.files import object_params_path

        candidates = [object_params_path(fit.with_suffix(".yaml"), obj)]
    elif dist.params_file:
        candidates.append(Path(dist.params_file))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise Sim2RealError(f"{fit}: cannot find the fit's params YAML (looked for "
                        f"{', '.join(str(c) for c in candidates)}); give the other parameters with --params FILE")


def base_params(args: argparse.Namespace, dist: FitDistribution) -> tuple[ParameterSet, Path]:
    """Values of the parameters not fitted, and the file they came from.

    The fit's own params YAML must agree with fit.json on the fitted values (otherwise it is
    not this fit's file); a file named by ``--params`` is taken as it is.
    """
    from sim2real.errors import Sim2RealError
    from sim2real.params import load_params

    if args.params:
        return load_params(args.params), Path(args.params)
    path = fit_params_file(Path(args.fit), dist, getattr(args, "object", None))
    base = load_params(path)
    for group, value in zip(dist.groups, dist.mean, strict=True):
        for name in group:
            if abs(float(base[name]) - value) > 1e-9 * max(1.0, abs(value)):
                raise Sim2RealError(f"{path}: {name} = {float(base[name])!r} differs from the fit's value "
                                    f"{float(value)!r}; it is not this fit's params file: give the right one with "
                                    "--params FILE")
    return base, path


def check_out_dir(out: str) -> Path:
    """``--out DIR``: absent, or an empty directory; its location writable.

    Raises
    ------
    Sim2RealError
        A file, a non-empty directory or an unwritable location (one line).
    """
    from sim2real.errors import Sim2RealError

    path = check_output_location(out)
    if path.is_symlink() and not path.exists():
        raise Sim2RealError(f"--out {path} is a dangling symbolic link")
    if path.exists():
        if not path.is_dir():
            raise Sim2RealError(f"--out {path} exists and is not a directory")
        if any(path.iterdir()):
            raise Sim2RealError(f"--out {path} exists and is not empty; refusing to write into it")
    return path


def _t_note(dist: FitDistribution, distribution: str, inflate: float) -> str | None:
    """What the fit's Student's t intervals mean for the draws, or None (normal quantile)."""
    if dist.t_dof is None:
        return None
    ratio = dist.quantile / 1.959963984540054
    if distribution == "t":
        return (f"drawing the multivariate Student's t with {dist.t_dof} dof of the fit's intervals "
                f"(quantile {dist.quantile:.3g}): heavy tails with few trials")
    return (f"the fit's 95 % intervals use Student's t with {dist.t_dof} dof (quantile {dist.quantile:.3g}, "
            f"{dist.clusters} trials); these normal draws span +-1.96 x {inflate:g} std, {ratio / inflate:.3g} x "
            f"narrower than those intervals (--distribution t, or --inflate {ratio:.3g}, to match them)")


def fit_band_calibration(document: FitDocument, source: str) -> BandCalibration | None:
    """The band calibration fit.json keeps (``validation.spread.calibration``) at its own level, None without one
    (:func:`sim2real.sysid.prediction.spread_calibration.fit_calibration`; one-line error when it is invalid)."""
    from sim2real.sysid.prediction import fit_calibration

    calibration = fit_calibration(document, source)
    if calibration is None:
        return None
    assert document.validation is not None  # fit_calibration found the calibration there
    return calibration.at_level(float(document.validation["spread"]["calibration"]["level"]))


def object_distribution(dist: FitDistribution, obj: str | None, source: str) -> FitDistribution:
    """The distribution to sample: the fit's, or for a fit with per-object unknowns (``NAME[OBJECT]``) the one of
    ``--object``'s trials (:meth:`~sim2real.sysid.prediction.sampling.FitDistribution.for_object`).

    Raises
    ------
    InputError
        A per-object fit without ``--object`` (the message lists its objects), or ``--object`` for a fit without
        per-object parameters or naming no object of it.
    """
    from sim2real.errors import InputError

    if obj is None:
        if dist.objects:
            raise InputError(f"{source}: the fit has per-object parameters (objects {', '.join(dist.objects)}); a "
                             "sample is one object's parameter sets: give --object NAME")
        return dist
    return dist.for_object(obj)


def run(args: argparse.Namespace) -> int:
    """Handler of ``sim2real sample``; exit statuses in the epilog."""
    import secrets

    import numpy as np

    from sim2real.sysid.files import (
        BAND_CALIBRATION_KEY,
        BAND_NOTE_KEY,
        SAMPLES_CSV,
        SAMPLES_SCHEMA,
        band_note,
        read_fit_document,
        sample_file_name,
        write_samples,
    )
    from sim2real.sysid.prediction import describe_method, draw_samples, fit_distribution
    from sim2real.trials.schema import versions

    out = check_out_dir(args.out)
    document = read_fit_document(args.fit)
    dist = object_distribution(fit_distribution(document, str(args.fit), allow_unconverged=args.allow_unconverged),
                               args.object, str(args.fit))
    calibration = fit_band_calibration(document, str(args.fit))
    base, base_file = base_params(args, dist)
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    draw = draw_samples(dist, args.count, np.random.default_rng(seed), args.inflate, args.distribution)
    if dist.status != "converged":
        _log(f"WARNING: the fit did not converge (status '{dist.status}'); sampling it as --allow-unconverged asks")
    for problem in dist.problems:
        _log(f"fit problem: {problem}")
    note = _t_note(dist, args.distribution, args.inflate)
    labels = dist.labels
    description: dict[str, Any] = {
        "schema": SAMPLES_SCHEMA,
        "method": describe_method(dist, draw),
        "distribution": draw.distribution, "dof": draw.dof, "seed": seed, "inflate": draw.inflate,
        "count": args.count, "accepted": args.count, "rejected": draw.rejected, "drawn": draw.drawn,
        "acceptance_rate": draw.acceptance, "rejected_by": draw.rejected_by,
        "fit_file": str(Path(args.fit).resolve()), "object": args.object,
        "fit_status": dist.status, "fit_problems": list(dist.problems),
        "fit_uncertainty": {"method": dist.method, "clusters": dist.clusters, "quantile": dist.quantile},
        "note": note,
        "base_params_file": str(base_file.resolve()),
        "names": list(dist.names), "unknowns": [list(g) for g in dist.groups],
        "mean": dict(zip(labels, dist.mean.tolist(), strict=True)),
        "std": dict(zip(labels, dist.std.tolist(), strict=True)),
        "correlation": {"names": list(labels), "matrix": dist.correlation.tolist()},
        "bounds": {label: [float(lo), float(hi)] for label, lo, hi in zip(labels, dist.lower, dist.upper, strict=True)},
        "files": {"params_first": sample_file_name(0, args.count),
                  "params_last": sample_file_name(args.count - 1, args.count), "table": SAMPLES_CSV},
        BAND_CALIBRATION_KEY: calibration.as_dict() if calibration is not None else None,
        BAND_NOTE_KEY: band_note(calibration),
        "versions": versions(),
    }
    write_samples(out, base, dist, draw, description)
    _log(f"fit {args.fit}: {dist.status}; {len(dist.groups)} unknown(s): "
         + ", ".join("=".join(g) for g in dist.groups) + f"; uncertainty: {dist.method}")
    if note:
        _log(note)
    _log(f"seed {seed}; {draw.distribution} draws, inflate {draw.inflate:g}: {draw.drawn} drawn, {args.count} "
         f"accepted, {draw.rejected} rejected outside the bounds ({100.0 * draw.rejected / draw.drawn:.3g} %)")
    for label, rejected in draw.rejected_by.items():
        if rejected:
            k = labels.index(label)
            _log(f"  {label}: {rejected} draw(s) outside [{dist.lower[k]:g}, {dist.upper[k]:g}]")
    _log(f"other parameters from {base_file}")
    _log(band_note(calibration))
    _log(f"wrote {out}/: {args.count} params file(s) ({sample_file_name(0, args.count)} ...), {SAMPLES_CSV}, "
         "samples.json")
    return 0
