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

from sim2real.filemodes import staging_dir
from sim2real.params import ParameterSet, save_params
from sim2real.sysid.sampling import FitDistribution, SampleDraw

#: File names inside a samples directory.
SAMPLES_CSV = "samples.csv"
SAMPLES_JSON = "samples.json"
SAMPLES_SCHEMA = "sim2real.samples/1"


def sample_file_name(index: int, count: int) -> str:
    """``sample_0003.yaml``: four digits, more when ``count`` needs them."""
    width = max(4, len(str(max(count - 1, 0))))
    return f"sample_{index:0{width}d}.yaml"



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
