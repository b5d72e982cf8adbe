"""Import of the real ContactNets cube tosses (``shared/data/cube_toss``) as trials.

Each toss becomes one trial directory ``toss_<id>`` holding ``/real/box_pose`` at the recorded
148 Hz sample times (frame: the landing surface, z up, surface near z = 0; no arm), and a
trial.json with the cube's measured parameters under ``"object"``, its first-sample
velocities under ``"initial_state"``, the data source and licence under ``"source"`` and the
scene check under ``"import"`` (``scene_checks``): a toss starts in the air, so only a cube
starting inside the surface is refused (:mod:`sim2real.trials.scene_checks`, ``sunken``; the 570
shipped tosses start 15-172 mm above it).
"""

from __future__ import annotations

import os
import shutil
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.errors import DataError, InputError, Sim2RealError
from sim2real.filemodes import staging_dir
from sim2real.paths import check_regular_file
from sim2real.trials.scene import SceneSpec
from sim2real.trials.scene_checks import DEFAULT_SCENE_TOLERANCE_M, SCENE_CHECKS_KEY, SceneSamples, check_trials
from sim2real.trials.writer import TrialBagWriter, write_run_meta

SURFACE_FRAME = "cube_toss_surface"
"""frame_id of imported cube poses: the tagged landing board of the ContactNets set-up."""

REQUIRED_KEYS: tuple[str, ...] = ("t", "position", "quaternion", "traj_offsets", "cube_side_m")

SOURCE_NOTE: dict[str, str] = {
    "dataset": "ContactNets real cube tosses (DAIR Lab, University of Pennsylvania)",
    "repository": "github.com/DAIRLab/contact-nets, data/tosses_processed (commit c3dc21c9)",
    "license": "BSD-3-Clause, Copyright (c) 2020 Dynamic Autonomy and Intelligent Robotics Lab; "
               "see LICENSE-contact-nets-BSD-3-Clause.txt next to the source file",
    "citation": "S. Pfrommer, M. Halm, M. Posa. ContactNets: Learning Discontinuous Contact Dynamics with "
                "Smooth, Implicit Representations. CoRL 2020, arXiv:2009.11193",
}


@dataclass(frozen=True)
class CubeTossData:
    """The tosses of a cube-toss NPZ file.

    Attributes
    ----------
    t : numpy.ndarray, shape (N,)
        s since the first sample of its toss.
    position : numpy.ndarray, shape (N, 3)
        Cube centre, m, surface frame.
    quaternion : numpy.ndarray, shape (N, 4)
        (w, x, y, z), cube body → surface frame.
    velocity, angular_velocity : numpy.ndarray, shape (N, 3) or None
        m/s (surface frame) and rad/s (cube body frame), if present in the file.
    offsets : numpy.ndarray, shape (T + 1,)
        Toss ``i`` is rows ``offsets[i]:offsets[i + 1]``.
    object_meta : dict
        Cube parameters given by the file (side, mass, inertia, nominal friction, ...).
    """

    t: np.ndarray
    position: np.ndarray
    quaternion: np.ndarray
    velocity: np.ndarray | None
    angular_velocity: np.ndarray | None
    offsets: np.ndarray
    object_meta: dict[str, Any]

    @property
    def n_tosses(self) -> int:
        """Number of tosses T."""
        return int(self.offsets.shape[0] - 1)


def _scalar(data: Any, key: str) -> float | None:
    if key not in data.files:
        return None
    value = np.asarray(data[key])
    if value.shape != () or not np.issubdtype(value.dtype, np.number):
        raise DataError(f"key '{key}' must be a numeric scalar, got shape {value.shape} {value.dtype}")
    return float(value)


def load_cube_tosses(path: str | Path) -> CubeTossData:
    """Load and check a cube-toss NPZ (format: ``shared/data/cube_toss/README.md``).

    Raises
    ------
    Sim2RealError
        Missing or unreadable file, missing keys, inconsistent shapes or offsets.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"cube-toss file {path} does not exist")
    check_regular_file(path, "cube-toss file")
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [key for key in REQUIRED_KEYS if key not in data.files]
            if missing:
                raise DataError(f"{path} is not a cube-toss file: missing keys {', '.join(missing)}")
            arrays = {key: np.asarray(data[key]) for key in
                      ("t", "position", "quaternion", "traj_offsets", "velocity", "angular_velocity")
                      if key in data.files}
            side = _scalar(data, "cube_side_m")
            object_meta: dict[str, Any] = {"name": "ContactNets cube", "side_m": side,
                                           "size_m": [side, side, side]}
            for key, name in (("cube_mass_kg", "mass_kg"), ("cube_inertia_kgm2", "inertia_kgm2"),
                              ("friction_coefficient_nominal", "friction_coefficient_nominal"),
                              ("restitution_nominal", "restitution_nominal"), ("gravity_mps2", "gravity_mps2"),
                              ("sample_rate_hz", "sample_rate_hz")):
                value = _scalar(data, key)
                if value is not None:
                    object_meta[name] = value
    except Sim2RealError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        raise DataError(f"cannot read cube-toss file {path}: {reason}") from None
    t, position, quaternion, offsets = (arrays["t"], arrays["position"], arrays["quaternion"],
                                        arrays["traj_offsets"])
    n = t.shape[0]
    if t.ndim != 1 or position.shape != (n, 3) or quaternion.shape != (n, 4):
        raise DataError(f"{path}: expected t (N,), position (N, 3), quaternion (N, 4); got "
                        f"{t.shape}, {position.shape}, {quaternion.shape}")
    for key in ("velocity", "angular_velocity"):
        if key in arrays and arrays[key].shape != (n, 3):
            raise DataError(f"{path}: {key} must have shape ({n}, 3), got {arrays[key].shape}")
    if (offsets.ndim != 1 or offsets.shape[0] < 2 or not np.issubdtype(offsets.dtype, np.integer)
            or offsets[0] != 0 or offsets[-1] != n or np.any(np.diff(offsets) <= 0)):
        raise DataError(f"{path}: traj_offsets must rise strictly from 0 to {n}")
    if side is None or not side > 0:
        raise DataError(f"{path}: cube_side_m must be positive")
    return CubeTossData(t.astype(float), position.astype(float), quaternion.astype(float),
                        arrays.get("velocity"), arrays.get("angular_velocity"), offsets.astype(np.int64),
                        object_meta)


def parse_selection(spec: str | None, count: int) -> list[int]:
    """Parse a toss selection such as ``"0-19,100"`` into sorted unique indices in ``[0, count)``.

    ``None`` or ``"all"`` selects every toss. Ranges are inclusive (``0-0`` is toss 0). An empty entry,
    a range that runs backwards and a toss selected twice (``0-0,0-0``, ``0-5,3``) are refused: the
    selection would not say what was meant.
    """
    if spec is None or spec.strip().lower() == "all":
        return list(range(count))
    chosen: set[int] = set()
    for part in spec.split(","):
        item = part.strip()
        try:
            if "-" in item[1:]:
                lo_text, hi_text = item.split("-", 1)
                lo, hi = int(lo_text), int(hi_text)
            else:
                lo = hi = int(item)
        except ValueError:
            raise InputError(f"bad toss selection '{spec}': '{item}' is not N or N-M") from None
        if lo > hi:
            raise InputError(f"bad toss selection '{spec}': range {item} runs backwards")
        if lo < 0 or hi >= count:
            raise InputError(f"bad toss selection '{spec}': {item} is outside 0-{count - 1}")
        again = chosen.intersection(range(lo, hi + 1))
        if again:
            raise InputError(f"bad toss selection '{spec}': {item} selects toss {min(again)} again; "
                             f"give each toss once")
        chosen.update(range(lo, hi + 1))
    return sorted(chosen)


def toss_trial_name(index: int) -> str:
    """Trial directory name of toss ``index``: ``toss_007``."""
    return f"toss_{index:03d}"


def _toss_rows(data: CubeTossData, index: int) -> slice:
    return slice(int(data.offsets[index]), int(data.offsets[index + 1]))


def _scenes(data: CubeTossData, indices: list[int], tolerance_m: float, force: bool,
            log: Callable[[str], None]) -> dict[str, dict[str, Any]]:
    """The scene check of every selected toss (the cube may not start inside the surface), before any is
    written: the ``import.scene_checks`` record per trial name; raises for a failing toss unless ``force``."""
    scenes = []
    for index in indices:
        rows = _toss_rows(data, index)
        scenes.append((toss_trial_name(index), SceneSamples(data.t[rows], data.position[rows], data.quaternion[rows])))
    side = float(data.object_meta["side_m"])
    return check_trials(scenes, {f"box.size_{a}": side for a in "xyz"}, None, tolerance_m, force, log,
                        hint="check the file's frame (the landing surface at z = 0) and cube_side_m")


def _write_toss(run_dir: Path, data: CubeTossData, index: int, npz_path: Path,
                scene: dict[str, Any] | None = None) -> Path:
    rows = _toss_rows(data, index)
    t = data.t[rows]
    times_ns = np.round(t * 1e9).astype(np.int64)
    writer = TrialBagWriter(run_dir, toss_trial_name(index), start_ns=0, frame_id=SURFACE_FRAME)
    try:
        side = data.object_meta["side_m"]
        params: dict[str, float] = {"box.size_x": side, "box.size_y": side, "box.size_z": side}
        # the recording carries no date: its stamps count from 0 (see the writer's time convention)
        writer.write_scene(SceneSpec.from_params(["real"], params=params, root_frame=SURFACE_FRAME))
        for t_ns, p, q in zip(times_ns, data.position[rows], data.quaternion[rows], strict=True):
            writer.write_box_pose("real", int(t_ns), p, q)
        if "mass_kg" in data.object_meta:
            params["box.mass"] = data.object_meta["mass_kg"]
        initial_state: dict[str, Any] = {}
        if data.velocity is not None:
            initial_state["velocity_mps"] = data.velocity[rows][0]
        if data.angular_velocity is not None:
            initial_state["angular_velocity_body_radps"] = data.angular_velocity[rows][0]
        meta = {
            "mode": "cube_toss",
            "params": params,
            "object": {**data.object_meta, "pusher_shape": None, "parameters": params},
            "initial_state": initial_state,
            "frame": SURFACE_FRAME + " (z up, landing surface near z = 0; no arm)",
            "timing": {"start_ns": 0, "end_ns": int(times_ns[-1]), "wall_s": float(t[-1])},
            "source": {**SOURCE_NOTE, "file": str(npz_path), "toss_id": index},
            **({"import": {SCENE_CHECKS_KEY: scene}} if scene is not None else {}),
        }
        return writer.close(meta, complete=True)
    except BaseException:
        writer.abort()
        raise


def import_cube_tosses(npz_path: str | Path, out_dir: str | Path, selection: str | None = None,
                       progress: Callable[[int, int], None] | None = None,
                       scene_tolerance_m: float = DEFAULT_SCENE_TOLERANCE_M, force: bool = False,
                       log: Callable[[str], None] | None = None) -> list[Path]:
    """Convert selected tosses into a run directory of trials; all or nothing.

    Parameters
    ----------
    npz_path : path
        The cube-toss NPZ.
    out_dir : path
        Run directory to create; must not exist.
    selection : str, optional
        Toss selection (see :func:`parse_selection`); default all.
    progress : callable, optional
        Called as ``progress(done, total)`` after each toss.
    scene_tolerance_m : float
        How far (m) a cube may start below the surface before the toss is refused (``sunken``).
    force : bool
        Import a refused toss anyway, flagged in its trial.json (``import.scene_checks.problems``).
    log : callable, optional
        Receives a warning line per toss so flagged.

    Returns
    -------
    list of pathlib.Path
        The trial directories, in toss order.
    """
    out_dir = Path(out_dir)
    if out_dir.exists():
        raise InputError(f"output directory {out_dir} already exists; choose a new one")
    data = load_cube_tosses(npz_path)
    indices = parse_selection(selection, data.n_tosses)
    scenes = _scenes(data, indices, scene_tolerance_m, force, log or (lambda _line: None))
    parent = out_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp_run = staging_dir(parent, prefix=f".{out_dir.name}.", suffix=".partial")
    try:
        written = []
        for k, index in enumerate(indices):
            written.append(_write_toss(tmp_run, data, index, Path(npz_path), scenes.get(toss_trial_name(index))))
            if progress is not None:
                progress(k + 1, len(indices))
        write_run_meta(tmp_run, {"mode": "cube_toss", "source": {**SOURCE_NOTE, "file": str(npz_path)},
                                 "tosses": indices, "object": data.object_meta})
        if out_dir.exists():
            raise Sim2RealError(f"output directory {out_dir} appeared during the import; not overwriting it")
        os.rename(tmp_run, out_dir)
    except BaseException:
        shutil.rmtree(tmp_run, ignore_errors=True)
        raise
    return [out_dir / p.name for p in written]

