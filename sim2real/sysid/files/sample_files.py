"""A samples directory (``sim2real sample``): one complete ROS 2 params file per drawn parameter set,
``samples.csv`` with every set in a row and ``samples.json`` describing the draw, written all or nothing."""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sim2real.errors import DataError
from sim2real.filemodes import staging_dir
from sim2real.params import ParameterSet, save_params
from sim2real.sysid.prediction import BandCalibration, FitDistribution, SampleDraw

#: File names inside a samples directory.
SAMPLES_CSV = "samples.csv"
SAMPLES_JSON = "samples.json"
SAMPLES_SCHEMA = "sim2real.samples/1"
#: Key of samples.json (and of a sweep's sweep.json) holding the fit's band calibration
#: (:meth:`sim2real.sysid.prediction.bands.BandCalibration.as_dict`, or null), and of the sentence that says what
#: it means.
BAND_CALIBRATION_KEY = "band_calibration"
BAND_NOTE_KEY = "band_note"


def sample_file_name(index: int, count: int) -> str:
    """``sample_0003.yaml``: four digits, more when ``count`` needs them."""
    width = max(4, len(str(max(count - 1, 0))))
    return f"sample_{index:0{width}d}.yaml"


def band_note(calibration: BandCalibration | None, kept_in: str = SAMPLES_JSON, used_by: str = "sweep/report") -> str:
    """What the sets carry of a prediction's uncertainty, and whether the fit's band calibration comes with them.

    Parameters
    ----------
    calibration : BandCalibration or None
        The fit's (fit.json ``validation.spread.calibration``); None when it has none.
    kept_in, used_by : str
        The file that keeps it, and what reads it there.
    """
    if calibration is None:
        return ("the fit has no band calibration (no held-out spread: 'fit --spread-draws' with held-out trials "
                "calibrates one): the sets hold the parameters' uncertainty only, and predictions from them "
                "(sweep, report --sweep) are parameter-only, without the model's discrepancy")
    tau = calibration.discrepancy
    short = "" if calibration.calibrated else (f"; NOT CALIBRATED at its level: {calibration.trials} trial(s) "
                                               f"guarantee {100 * calibration.guaranteed_level:.0f} %")
    return (f"the sets hold the parameters' uncertainty only; the fit's calibrated discrepancy τ = x "
            f"{1000 * tau[0]:.3g} mm, y {1000 * tau[1]:.3g} mm, yaw {tau[2]:.3g} deg ({100 * calibration.level:g} % "
            f"band, q = {calibration.quantile:.3g} from {calibration.trials} held-out trial(s){short}) is kept in "
            f"{kept_in} for {used_by}")


def read_band_calibration(samples_dir: str | os.PathLike[str]) -> BandCalibration | None:
    """The band calibration a samples directory keeps (samples.json :data:`BAND_CALIBRATION_KEY`).

    Returns
    -------
    BandCalibration or None
        None when samples.json is missing, or holds none (a fit without one, or written before
        samples carried it).

    Raises
    ------
    Sim2RealError
        One line naming the file: samples.json is not a JSON object, or its calibration is invalid.
    """
    from sim2real.paths import read_text_file

    path = Path(samples_dir) / SAMPLES_JSON
    if not path.is_file():
        return None
    try:
        document = json.loads(read_text_file(path, SAMPLES_JSON))
    except ValueError:
        raise DataError(f"{path}: not valid JSON") from None
    if not isinstance(document, dict):
        raise DataError(f"{path}: not a samples description (expected a JSON object written by 'sim2real sample')")
    stored = document.get(BAND_CALIBRATION_KEY)
    if stored is None:
        return None
    try:
        return BandCalibration.from_dict(stored, f"{path}: {BAND_CALIBRATION_KEY}")
    except ValueError as err:
        raise DataError(str(err)) from None


def _fmt(value: float) -> str:
    return repr(float(value))


def write_samples(out: str | os.PathLike[str], base: ParameterSet, dist: FitDistribution, draw: SampleDraw,
                  description: Mapping[str, Any]) -> list[Path]:
    """Write the sets into the directory ``out``, all or nothing.

    ``out/sample_0000.yaml`` ... (complete ROS 2 params files: ``base`` with the fitted names
    replaced), ``out/samples.csv`` (columns ``sample`` and the fitted names; one row per set) and
    ``out/samples.json`` (``description``). The files are written into a temporary directory
    next to ``out`` and moved into place at the end; ``out`` may exist only as an empty directory.

    Parameters
    ----------
    out : path-like
    base : ParameterSet
        Values of every parameter the fit did not fit.
    dist : FitDistribution
    draw : SampleDraw
    description : mapping
        The samples.json object.

    Returns
    -------
    list of pathlib.Path
        The params files written, in sample order.
    """
    out = Path(out)
    names = dist.names
    count = draw.values.shape[0]
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = staging_dir(out.parent, prefix=f".{out.name}.")  # the umask's mode, not mkdtemp's 0700
    try:
        files = []
        with (stage / SAMPLES_CSV).open("w", encoding="utf-8", newline="") as table:
            writer = csv.writer(table, lineterminator="\n")
            writer.writerow(["sample", *names])
            for i, row in enumerate(draw.values):
                values = dict(zip(names, (float(v) for v in row), strict=True))
                name = sample_file_name(i, count)
                header = (f"Sampled by sim2real sample from {dist.source}: set {i} of {count}\n"
                          f"{draw.distribution} draw, inflate {draw.inflate:g}; see {SAMPLES_JSON}")
                save_params(stage / name, base.replace(values), header=header)
                writer.writerow([i, *(_fmt(v) for v in row)])
                files.append(out / name)
        with (stage / SAMPLES_JSON).open("w", encoding="utf-8") as handle:
            json.dump(dict(description), handle, indent=2)
            handle.write("\n")
        if out.exists():
            out.rmdir()  # an empty directory (the caller checked)
        os.replace(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return files
