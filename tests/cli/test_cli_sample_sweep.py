"""``sim2real sample`` (parameter sets drawn from a fit) and ``sim2real sweep`` (many standard pushes, resumable).

Statistical checks use bounds at a false-alarm rate of about 1e-6 (the seeds are fixed, so they
are deterministic; a wrong mean, covariance, truncation or tie would exceed them by far).
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from children import HANG_GUARD_S, default_sigint
from scipy import stats

from sim2real.cli import main
from sim2real.params import ParameterSet, load_params, save_params
from sim2real.sysid.prediction.sampling import draw_samples, read_fit_distribution

#: z of a two-sided false-alarm probability of 1e-6 per check.
Z = float(stats.norm.ppf(1 - 0.5e-6))

VALUES = {"contact.mu_table": 0.45, "box.com_z": -0.04, "arm.servo_tau": 0.06}
STD = {"contact.mu_table": 0.03, "box.com_z": 0.01, "arm.servo_tau": 0.005}
CORRELATION = [[1.0, 0.6, -0.3], [0.6, 1.0, 0.2], [-0.3, 0.2, 1.0]]
#: Push of the sweep tests: 0.05 + 0.1 + 0.2 s (54 steps of 10 ms) instead of the standard 2.2 s.
SHORT_EXPERIMENT = """\
/**:
  ros__parameters:
    distances: [0.30]
    push: {height: 0.15, lateral: 0.0, start_x: 0.20, end_x: 0.30, speed: 0.55, ramp_time: 0.1,
           pre_time: 0.05, settle_time: 0.2, rate_hz: 100.0}
"""


def write_fit(directory: Path, values=VALUES, std=STD, correlation=CORRELATION, tied=(), status="converged",
              clusters=5, **extra) -> Path:
    """A fit.json as ``sim2real fit`` writes it (the keys ``sample`` reads) and its params YAML."""
    directory.mkdir(parents=True, exist_ok=True)
    labels = [n for n in values if not any(n in group[1:] for group in tied)]
    document = {
        "status": status, "problems": [] if status == "converged" else ["not converged: stopped at the iteration "
                                                                        "limit (20 iterations)"],
        "values": values, "start_values": values, "std": std, "ci95": {},
        "correlation": {"names": labels, "matrix": correlation}, "trace": [], "tied": [list(g) for g in tied],
        "data": {"uncertainty": {"method": f"cluster-robust sandwich over {clusters} trials", "clusters": clusters,
                                 "quantile": float(stats.t.ppf(0.975, clusters - 1))}},
        **extra,
    }
    path = directory / "fitted.json"
    path.write_text(json.dumps(document))
    save_params(directory / "fitted.yaml", ParameterSet.nominal().replace({"box.mass": 0.61, **values}),
                header="Fitted by sim2real fit (test)")
    return path


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def read_table(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


# ----------------------------------------------------------------------------------------------- sample


@pytest.mark.slow
def test_sample_reproduces_the_fitted_mean_and_covariance(tmp_path, capsys):
    fit = write_fit(tmp_path / "fit")
    code, _, err = run_cli(capsys, "sample", str(fit), "-n", "2000", "--seed", "7", "--out", str(tmp_path / "s"))
    assert code == 0, err
    header, rows = read_table(tmp_path / "s" / "samples.csv")
    names = list(VALUES)
    assert header == ["sample", *names] and len(rows) == 2000
    x = np.array([[float(v) for v in row[1:]] for row in rows])
    n = x.shape[0]
    mu = np.array([VALUES[k] for k in names])
    sd = np.array([STD[k] for k in names])
    cov = np.array(CORRELATION) * np.outer(sd, sd)
    # mean: Hotelling's T^2 with the known covariance is chi^2 with 3 dof
    d = x.mean(axis=0) - mu
    assert n * d @ np.linalg.solve(cov, d) < stats.chi2.ppf(1 - 1e-6, 3)
    # covariance: each entry within Z standard errors (normal theory: var s_ij = (S_ij^2 + S_ii S_jj) / (n - 1))
    s = np.cov(x, rowvar=False)
    se = np.sqrt((cov**2 + np.outer(np.diag(cov), np.diag(cov))) / (n - 1))
    assert np.all(np.abs(s - cov) <= Z * se), (s, cov)
    summary = json.loads((tmp_path / "s" / "samples.json").read_text())
    assert summary["rejected"] == 0 and summary["accepted"] == 2000 and summary["seed"] == 7
    assert summary["distribution"] == "normal" and summary["inflate"] == 1.0
    assert summary["fit_file"] == str(fit.resolve())
    # the t intervals of the fit are named, and how much narrower the normal draws are
    assert "Student's t with 4 dof" in err and "--inflate 1.42" in err
    # each params file is the fit's YAML with the drawn values
    assert len(list((tmp_path / "s").glob("sample_*.yaml"))) == 2000
    third = load_params(tmp_path / "s" / "sample_0003.yaml")
    assert [third[k] for k in names] == [float(v) for v in rows[3][1:]]
    assert third["box.mass"] == 0.61 and third["contact.mu_pusher"] == ParameterSet.nominal()["contact.mu_pusher"]


def test_sample_inflate_scales_the_spread_and_the_seed_repeats(tmp_path, capsys):
    fit = write_fit(tmp_path / "fit")
    for name, inflate in (("a", "1"), ("b", "1"), ("c", "3")):
        code, _, err = run_cli(capsys, "sample", str(fit), "-n", "300", "--seed", "11", "--inflate", inflate,
                               "--out", str(tmp_path / name))
        assert code == 0, err
    assert (tmp_path / "a" / "samples.csv").read_text() == (tmp_path / "b" / "samples.csv").read_text()
    xa = np.array([[float(v) for v in r[1:]] for r in read_table(tmp_path / "a" / "samples.csv")[1]])
    xc = np.array([[float(v) for v in r[1:]] for r in read_table(tmp_path / "c" / "samples.csv")[1]])
    mu = np.array(list(VALUES.values()))
    np.testing.assert_allclose(xc - mu, 3 * (xa - mu), rtol=1e-9, atol=1e-15)  # same draws, 3 x the deviations


@pytest.mark.slow
def test_sample_respects_bounds(tmp_path, capsys):
    """mu_table = 0.01 +- 0.02 crosses its lower bound 0: draws below are rejected (P = Phi(-0.5)) and redrawn."""
    values = {"contact.mu_table": 0.01, "box.mass": 0.5}
    std = {"contact.mu_table": 0.02, "box.mass": 0.05}
    fit = write_fit(tmp_path / "fit", values, std, [[1.0, 0.4], [0.4, 1.0]], clusters=1)
    code, _, err = run_cli(capsys, "sample", str(fit), "-n", "2000", "--seed", "3", "--out", str(tmp_path / "s"))
    assert code == 0, err
    _, rows = read_table(tmp_path / "s" / "samples.csv")
    mu_table = np.array([float(r[1]) for r in rows])
    assert mu_table.min() >= 0.0 and len(rows) == 2000
    summary = json.loads((tmp_path / "s" / "samples.json").read_text())
    drawn, rejected = summary["drawn"], summary["rejected"]
    assert drawn == 2000 + rejected and summary["rejected_by"]["contact.mu_table"] == rejected
    p = stats.norm.cdf(-0.5)
    assert abs(rejected / drawn - p) <= Z * math.sqrt(p * (1 - p) / drawn)
    # the kept draws follow the truncated normal: its mean is mu + sigma phi(a) / (1 - Phi(a)), a = -0.5
    truncated = stats.truncnorm(-0.5, np.inf, loc=0.01, scale=0.02)
    assert abs(mu_table.mean() - truncated.mean()) <= Z * truncated.std() / math.sqrt(len(mu_table))
    assert "rejected outside the bounds" in err and "contact.mu_table" in err


def test_sample_tied_parameters_follow_their_leader(tmp_path, capsys):
    values = {"box.size_x": 0.12, "box.size_y": 0.12, "contact.mu_table": 0.4}
    std = {"box.size_x": 0.004, "box.size_y": 0.004, "contact.mu_table": 0.02}
    fit = write_fit(tmp_path / "fit", values, std, [[1.0, -0.5], [-0.5, 1.0]], tied=[("box.size_x", "box.size_y")])
    code, _, err = run_cli(capsys, "sample", str(fit), "-n", "50", "--seed", "1", "--out", str(tmp_path / "s"))
    assert code == 0, err
    header, rows = read_table(tmp_path / "s" / "samples.csv")
    assert header == ["sample", "box.size_x", "box.size_y", "contact.mu_table"]
    assert all(r[1] == r[2] for r in rows) and len({r[1] for r in rows}) == 50
    params = load_params(tmp_path / "s" / "sample_0049.yaml")
    assert params["box.size_x"] == params["box.size_y"] == float(rows[49][1])
    assert params["box.size_z"] == 0.21  # not fitted: the fit's value


def test_t_draws_match_the_fit_intervals(tmp_path):
    """--distribution t: each marginal's central 95 % is mean +- t_{0.975, G-1} std (the fit's ci95)."""
    dist = read_fit_distribution(write_fit(tmp_path / "fit", clusters=4))
    draw = draw_samples(dist, 20000, np.random.default_rng(5), distribution="t")
    assert draw.dof == 3
    assert draw.rejected < 0.005 * draw.drawn  # heavy tails: a few draws 12+ scales out cross a bound
    inside = np.abs(draw.unknowns - dist.mean) <= dist.quantile * dist.std
    share = inside.mean(axis=0)
    assert np.all(np.abs(share - 0.95) <= Z * math.sqrt(0.95 * 0.05 / 20000)), share


def _fit_variant(tmp_path: Path, kind: str) -> Path:
    if kind == "bad json":
        path = tmp_path / "fit" / "fitted.json"
        path.parent.mkdir()
        path.write_text('{"status": "converged", "values": {')
        return path
    if kind == "unconverged":
        return write_fit(tmp_path / "fit", status="not converged")
    if kind == "no free parameters":
        return write_fit(tmp_path / "fit", values={}, std={}, correlation=[])
    if kind == "no covariance":
        path = write_fit(tmp_path / "fit")
        document = json.loads(path.read_text())
        del document["correlation"]
        path.write_text(json.dumps(document))
        return path
    if kind == "undetermined":
        return write_fit(tmp_path / "fit", std={**STD, "box.com_z": None})
    if kind == "mostly outside the bounds":
        return write_fit(tmp_path / "fit", values={"contact.mu_table": 1.0}, std={"contact.mu_table": 1000.0},
                         correlation=[[1.0]])
    return write_fit(tmp_path / "fit")


@pytest.mark.parametrize(("kind", "message"), [
    ("existing out", "exists and is not empty"),
    ("unconverged", "did not converge"),
    ("bad json", "not valid JSON"),
    ("no free parameters", "no free parameters"),
    ("no covariance", "no covariance"),
    ("undetermined", "no standard deviation for box.com_z"),
    ("mostly outside the bounds", "fall inside the registry bounds"),
])
def test_sample_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, kind, message):
    fit = _fit_variant(tmp_path, kind)
    out = tmp_path / "out"
    if kind == "existing out":
        out.mkdir()
        (out / "mine.txt").write_text("keep")
    before = sorted(p.name for p in tmp_path.iterdir())
    code, stdout, err = run_cli(capsys, "sample", str(fit), "-n", "10", "--out", str(out))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no out, no staging directory
    if kind == "existing out":
        assert [p.name for p in out.iterdir()] == ["mine.txt"] and (out / "mine.txt").read_text() == "keep"


def test_sample_unconverged_fit_with_allow_unconverged(tmp_path, capsys):
    fit = write_fit(tmp_path / "fit", status="not converged")
    code, _, err = run_cli(capsys, "sample", str(fit), "-n", "5", "--out", str(tmp_path / "s"),
                           "--allow-unconverged")
    assert code == 0 and "did not converge" in err
    assert json.loads((tmp_path / "s" / "samples.json").read_text())["fit_status"] == "not converged"


# ----------------------------------------------------------------------------------------------- sweep


@pytest.fixture(scope="module")
def experiment(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("experiment") / "short.yaml"
    path.write_text(SHORT_EXPERIMENT)
    return path


def grid_args(experiment: Path, out: Path, distances: str = "0.30,0.35", points: int = 2) -> list[str]:
    return ["sweep", "--distances", distances, "--set-grid", f"contact.mu_table=0.3:0.6:{points}",
            "--experiment", str(experiment), "--out", str(out)]


@pytest.fixture(scope="module")
def grid_sweep(tmp_path_factory, experiment) -> Path:
    out = tmp_path_factory.mktemp("sweep") / "grid"
    assert main(grid_args(experiment, out)) == 0
    return out


def _counts(err: str) -> tuple[int, int]:
    """(rows run now, rows from an earlier run) from the closing line."""
    line = next(x for x in err.splitlines() if x.startswith("sweep: done:"))
    now = int(line.split("(")[1].split(" run now")[0])
    earlier = int(line.split(", ")[1].split(" from")[0])
    return now, earlier


def test_sweep_grid_rows_match_simulate(grid_sweep, experiment, capsys):
    header, rows = read_table(grid_sweep / "outcomes.csv")
    assert header == ["point", "distance", "contact.mu_table", "final_x", "final_y", "final_z", "final_yaw",
                      "flipped", "max_tilt_deg", "touched", "degraded_steps", "error"]
    assert [(r[0], r[1], r[2]) for r in rows] == [("0", "0.3", "0.3"), ("0", "0.35", "0.3"),
                                                  ("1", "0.3", "0.6"), ("1", "0.35", "0.6")]
    config = json.loads((grid_sweep / "sweep.json").read_text())["config"]
    assert config["distances"] == [0.3, 0.35] and config["points"] == 2
    code, out, _ = run_cli(capsys, "simulate", "--distance", "0.35", "--set", "contact.mu_table=0.6",
                           "--experiment", str(experiment), "--json")
    assert code == 0
    summary = json.loads(out)
    row = dict(zip(header, rows[3], strict=True))
    assert [float(row[k]) for k in ("final_x", "final_y", "final_z")] == summary["final"]["box_position"]
    assert float(row["final_yaw"]) == summary["final"]["yaw_rad"]
    assert float(row["max_tilt_deg"]) == summary["max_tilt_deg"]
    assert row["flipped"] == ("1" if summary["flipped"] else "0")
    assert int(row["degraded_steps"]) == summary["solver"]["degraded"] and row["error"] == ""


def test_sweep_resumes_after_a_partial_line(grid_sweep, experiment, tmp_path, capsys):
    out = tmp_path / "grid"
    shutil.copytree(grid_sweep, out)
    table = out / "outcomes.csv"
    reference = table.read_bytes()
    lines = reference.decode().splitlines(keepends=True)
    # a kill in the middle of the last row, and a mark on a finished row: a redone row would lose it
    marked = lines[1].split(",")
    marked[3] = "123.0"
    table.write_text("".join([lines[0], ",".join(marked), *lines[2:4], lines[4][:25]]))
    code, _, err = run_cli(capsys, *grid_args(experiment, out))
    assert code == 0, err
    assert _counts(err) == (1, 3) and "3 done in an earlier run, 1 to run" in err
    resumed = table.read_text().splitlines(keepends=True)
    assert resumed[1] == ",".join(marked)  # not redone
    assert "".join([lines[0], lines[1], *resumed[2:]]).encode() == reference
    # nothing left to do: a third run simulates nothing
    code, _, err = run_cli(capsys, *grid_args(experiment, out))
    assert code == 0 and _counts(err) == (0, 4)


def test_sweep_refuses_a_changed_configuration(grid_sweep, experiment, tmp_path, capsys):
    out = tmp_path / "grid"
    shutil.copytree(grid_sweep, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    for args, words in ((grid_args(experiment, out, distances="0.30,0.40"), "--distances"),
                        (grid_args(experiment, out, points=3), "parameter points"),
                        ([*grid_args(experiment, out), "--set", "pd.kp=9"], "parameter points' values")):
        code, _, err = run_cli(capsys, *args)
        assert code == 2 and "different configuration" in err and words in err
        assert len(err.strip().splitlines()) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    code, _, err = run_cli(capsys, *grid_args(experiment, tmp_path / "other"))
    assert code == 2 and "holds no sweep.json" in err


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_interrupted_sweep_resumes_to_the_uninterrupted_table(experiment, tmp_path, capsys, signum):
    """Ctrl-C (or SIGTERM) a sweep running on two worker processes, resume it in one: the table equals an
    uninterrupted run."""
    args = grid_args(experiment, tmp_path / "cut", points=4)
    table = tmp_path / "cut" / "outcomes.csv"
    child = subprocess.Popen([sys.executable, "-m", "sim2real", *args, "--workers", "2"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline and child.poll() is None:
        if table.exists() and table.read_text().count("\n") >= 3:  # header + two rows
            break
        time.sleep(0.01)
    child.send_signal(signum)
    _, err = child.communicate(timeout=HANG_GUARD_S)
    assert child.returncode in (128 + signum, 0), err  # 0: it finished before the signal arrived
    text = table.read_text()
    assert text.endswith("\n")  # Ctrl-C and SIGTERM leave whole lines
    done_before = text.count("\n") - 1
    assert done_before >= 2 and all(line.count(",") == 11 for line in text.splitlines())
    code, _, err = run_cli(capsys, *args)
    assert code == 0, err
    assert _counts(err) == (8 - done_before, done_before)
    assert main(grid_args(experiment, tmp_path / "whole", points=4)) == 0
    assert table.read_bytes() == (tmp_path / "whole" / "outcomes.csv").read_bytes()


def test_sweep_over_samples_prints_flip_probability(experiment, tmp_path, capsys):
    fit = write_fit(tmp_path / "fit")
    assert main(["sample", str(fit), "-n", "3", "--seed", "2", "--out", str(tmp_path / "s")]) == 0
    capsys.readouterr()
    code, out, err = run_cli(capsys, "sweep", "--distances", "0.30,0.35", "--samples", str(tmp_path / "s"),
                             "--experiment", str(experiment), "--out", str(tmp_path / "sw"), "--write-trials")
    assert code == 0, err
    header, rows = read_table(tmp_path / "sw" / "outcomes.csv")
    assert header[2:5] == list(VALUES) and len(rows) == 6
    sample_1 = load_params(tmp_path / "s" / "sample_0001.yaml")
    assert [float(v) for v in rows[2][2:5]] == [sample_1[k] for k in VALUES]
    lines = out.strip().splitlines()
    assert len(lines) == 2
    for line, distance in zip(lines, ("0.3", "0.35"), strict=True):
        mine = [dict(zip(header, r, strict=True)) for r in rows if r[1] == distance]
        flips = sum(r["flipped"] == "1" for r in mine) / 3
        final = np.array([float(r["final_x"]) for r in mine])
        assert f"flip probability {flips:.3f}" in line
        assert f"{final.mean():.4f} m mean, {final.std(ddof=1):.4f} m std" in line
    assert len(list((tmp_path / "sw" / "trials").glob("point_*/trial_*/trial.json"))) == 6


# ------------------------------------------------------------------------------- band calibration (issue 55)

#: A fit's band calibration as fit.json validation.spread.calibration keeps it: 9 held-out trials, level 0.9
#: (q = the 9th smallest score, 1.8), discrepancy x 20 mm, y 5 mm, yaw 3 deg.
CALIBRATION = {"level": 0.9, "discrepancy": {"x_m": 0.02, "y_m": 0.005, "yaw_deg": 3.0},
               "scores": [0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8]}


def write_calibrated_fit(directory: Path) -> Path:
    """A fit.json whose held-out spread kept a band calibration (``fit --spread-draws``)."""
    from sim2real.sysid.prediction.bands import BandCalibration

    stored = BandCalibration.from_dict(CALIBRATION, "test").as_dict()
    return write_fit(directory, validation={"spread": {"calibration": stored, "level": 0.9}})


def test_sample_keeps_the_fits_band_calibration_or_says_it_has_none(tmp_path, capsys):
    code, _, err = run_cli(capsys, "sample", str(write_calibrated_fit(tmp_path / "cal")), "-n", "2", "--seed", "1",
                           "--out", str(tmp_path / "s"))
    assert code == 0, err
    kept = json.loads((tmp_path / "s" / "samples.json").read_text())
    assert kept["band_calibration"]["discrepancy"] == CALIBRATION["discrepancy"]
    assert kept["band_calibration"]["scores"] == CALIBRATION["scores"]
    assert kept["band_calibration"]["level"] == 0.9 and kept["band_calibration"]["quantile"] == 1.8
    for text in (err, kept["band_note"]):
        assert "the sets hold the parameters' uncertainty only" in text
        assert "τ = x 20 mm, y 5 mm, yaw 3 deg" in text and "kept in samples.json for sweep/report" in text
    code, _, err = run_cli(capsys, "sample", str(write_fit(tmp_path / "plain")), "-n", "2", "--seed", "1",
                           "--out", str(tmp_path / "p"))
    assert code == 0, err
    plain = json.loads((tmp_path / "p" / "samples.json").read_text())
    assert plain["band_calibration"] is None
    assert "the fit has no band calibration" in err and "the fit has no band calibration" in plain["band_note"]


def test_sample_refuses_an_invalid_band_calibration(tmp_path, capsys):
    fit = write_fit(tmp_path / "fit", validation={"spread": {"calibration": {**CALIBRATION, "scores": []}}})
    code, _, err = run_cli(capsys, "sample", str(fit), "-n", "2", "--out", str(tmp_path / "s"))
    assert code == 2 and "scores" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()


def test_calibration_goes_from_fit_through_samples_and_sweep_into_the_report(experiment, tmp_path, capsys):
    """fit.json (with a calibration) -> samples.json -> sweep.json -> report --sweep: the calibrated band of final x
    is each mode's centre +- q sqrt(s^2 + tau^2) of the rows (3 rows: one mode, its mean and standard deviation),
    wider than the rows' parameter-only range."""
    from fixtures.synthetic_trials import make_trial

    from sim2real.trials import write_run_meta, write_trial

    assert main(["sample", str(write_calibrated_fit(tmp_path / "fit")), "-n", "3", "--seed", "2",
                 "--out", str(tmp_path / "s")]) == 0
    capsys.readouterr()
    code, _, err = run_cli(capsys, "sweep", "--distances", "0.30", "--samples", str(tmp_path / "s"),
                           "--experiment", str(experiment), "--out", str(tmp_path / "sw"))
    assert code == 0, err
    sweep_meta = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    samples_meta = json.loads((tmp_path / "s" / "samples.json").read_text())
    assert sweep_meta["band_calibration"] == samples_meta["band_calibration"]
    assert "kept in sweep.json for report --sweep" in err and "kept in sweep.json" in sweep_meta["band_note"]
    real = tmp_path / "real"
    write_run_meta(real, {"mode": "standin"})
    write_trial(real, make_trial(0, 0.30, sim=False, real_travel=0.15))
    assert main(["report", str(real), "--sweep", str(tmp_path / "sw"), "--out", str(tmp_path / "report")]) == 0
    capsys.readouterr()
    markdown = (tmp_path / "report" / "report.md").read_text()
    header, rows = read_table(tmp_path / "sw" / "outcomes.csv")
    final_x = np.array([float(dict(zip(header, r, strict=True))["final_x"]) for r in rows])
    half = 1.8 * math.sqrt(final_x.std() ** 2 + 0.02 ** 2)
    low, high = final_x.mean() - half, final_x.mean() + half
    assert f"[{100 * low:.1f}, {100 * high:.1f}]" in markdown and "calibrated 90 % band" in markdown
    assert high - low > 2 * 1.8 * 0.02 > np.ptp(final_x)  # wider than the rows' own spread by the discrepancy
    assert "The final-x band is calibrated" in markdown and "parameter-only (NOT CALIBRATED" not in markdown


def test_sweep_over_samples_without_a_calibration_says_so(experiment, tmp_path, capsys):
    assert main(["sample", str(write_fit(tmp_path / "fit")), "-n", "1", "--seed", "2",
                 "--out", str(tmp_path / "s")]) == 0
    capsys.readouterr()
    code, _, err = run_cli(capsys, "sweep", "--distances", "0.30", "--samples", str(tmp_path / "s"),
                           "--experiment", str(experiment), "--out", str(tmp_path / "sw"))
    assert code == 0, err
    meta = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    assert meta["band_calibration"] is None and "the fit has no band calibration" in meta["band_note"]
    assert "the fit has no band calibration" in err
