"""The frames file of ``sim2real calibrate``: the import options that apply its corrections.

A frames file (YAML, format :data:`FRAMES_FORMAT`) holds ``box_transform``, ``box_offset`` (as
``--box-transform`` and ``--box-offset`` take them) and ``box_delay_s``, which ``import bag|csv --frames
FILE`` applies to the box stream alone, ``tool_offset`` (as ``--tool-offset`` takes it: the one the
trials were imported with, corrected when the calibration estimated it), ``frame_uncertainty`` (what
the calibration leaves unknown of the tracking frame's planar offset, :class:`FrameUncertainty`, which
the import keeps in each trial and spreads draw from), and under ``calibration`` the estimates
(:class:`~sim2real.trials.frame_calibration.FrameCalibration`), the residuals and the frames the
trials had been imported with. Frames: arm base frame; m, s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.errors import DataError, InputError
from sim2real.spatial import from_axis_angle, rotate
from sim2real.trials.contact_samples import TOOL_PARAMETERS
from sim2real.trials.frame_calibration import FrameCalibration
from sim2real.trials.meta import TrialMeta
from sim2real.trials.records import TrialRecord
from sim2real.trials.rigid import RigidTransform

#: Format tag of a frames file.
FRAMES_FORMAT = "sim2real.frames/1"
#: Largest box stream delay a frames file or ``--box-delay`` may hold, s.
MAX_DELAY_S = 10.0


@dataclass(frozen=True)
class ImportFrames:
    """What an import applied to the box stream alone (trial.json ``import``): ``--box-transform``,
    ``--box-offset`` and the box stream's delay; and the pusher's ``--tool-offset`` (``--transform``
    moves both streams: the calibration leaves it alone)."""

    box_transform: RigidTransform
    box_offset: RigidTransform
    box_delay_s: float
    tool_offset: RigidTransform = field(default_factory=RigidTransform)

    @classmethod
    def of_trial(cls, record: TrialRecord) -> ImportFrames:
        """The frames a trial was imported with (identity and 0 for a trial that was not imported)."""
        section = record.info.imported or {}
        return cls(RigidTransform.from_dict(section.get("box_transform")),
                   RigidTransform.from_dict(section.get("box_offset")), float(section.get("box_delay_s", 0.0)),
                   RigidTransform.from_dict(section.get("tool_offset")))

    def _numbers(self) -> tuple[float, ...]:
        return (*self.box_transform.translation, *self.box_transform.quaternion, *self.box_offset.translation,
                *self.box_offset.quaternion, self.box_delay_s, *self.tool_offset.translation,
                *self.tool_offset.quaternion)

    def same_as(self, other: ImportFrames) -> bool:
        return bool(np.allclose(self._numbers(), other._numbers(), rtol=0.0, atol=1e-12))


@dataclass(frozen=True)
class FramesOptions:
    """The import options a frames file sets (:func:`read_frames_file`): ``--box-transform`` and
    ``--box-offset`` as those options take them, the box delay (s), ``--tool-offset`` (None in a file
    written before it was kept) and the frame uncertainty (None likewise)."""

    box_transform: str
    box_offset: str
    box_delay_s: float
    tool_offset: str | None
    frame_uncertainty: FrameUncertainty | None


#: The frame corrections whose uncertainty a trial keeps (:class:`FrameUncertainty`), in its order.
UNCERTAIN_CORRECTIONS = ("dx_m", "dy_m", "dyaw_rad")
#: The tracking origin's corrections whose uncertainty a trial keeps too (absent in files written before: 0).
UNCERTAIN_ORIGIN = ("ox_m", "oy_m")


@dataclass(frozen=True)
class FrameUncertainty:
    """What is left unknown of the tracking frame after a calibration: the standard deviations of its
    planar offset and of the tracking origin's offset (trial.json ``import.frame_uncertainty``; spreads
    draw both from them).

    Attributes
    ----------
    std : ndarray, shape (3,)
        Of ``dx`` (m), ``dy`` (m) and ``dyaw`` (rad): the tracking frame turned by ``dyaw`` about
        ``pivot``, then shifted by (``dx``, ``dy``), in the arm base frame.
    pivot : ndarray, shape (3,)
        The point the turn is about, m, base frame.
    origin_std : ndarray, shape (2,)
        Of ``ox``, ``oy`` (m): the tracking origin's offset from the box centre, in the box's axes; 0 for a
        component the calibration did not determine (not applied: its prior says nothing of a push).
    """

    std: np.ndarray
    pivot: np.ndarray
    origin_std: np.ndarray = field(default_factory=lambda: np.zeros(2))

    def as_dict(self) -> dict[str, Any]:
        """trial.json ``import.frame_uncertainty`` (units in the keys)."""
        return {**{f"{name}_std": float(v) for name, v in zip(UNCERTAIN_CORRECTIONS, self.std, strict=True)},
                **{f"{name}_std": float(v) for name, v in zip(UNCERTAIN_ORIGIN, self.origin_std, strict=True)},
                "pivot_m": [float(v) for v in self.pivot]}

    @property
    def drawn(self) -> np.ndarray:
        """The standard deviations a spread draws from (5,): ``dx``, ``dy`` (m), ``dyaw`` (rad), ``ox``,
        ``oy`` (m)."""
        return np.concatenate([self.std, self.origin_std])

    @classmethod
    def from_dict(cls, document: Any, source: str) -> FrameUncertainty:
        """Read :meth:`as_dict` back; a one-line :class:`Sim2RealError` naming ``source`` when invalid."""
        try:
            std = np.array([float(document[f"{name}_std"]) for name in UNCERTAIN_CORRECTIONS])
            origin = np.array([float(document.get(f"{name}_std", 0.0)) for name in UNCERTAIN_ORIGIN])
            pivot = np.array([float(v) for v in document["pivot_m"]])
        except (KeyError, TypeError, ValueError, AttributeError):
            names = ", ".join(f"{name}_std" for name in UNCERTAIN_CORRECTIONS)
            raise DataError(f"{source}: frame_uncertainty needs {names} and pivot_m (3 numbers)") from None
        both = np.concatenate([std, origin])
        if pivot.shape != (3,) or not (np.all(np.isfinite(both)) and np.all(both >= 0) and np.all(np.isfinite(pivot))):
            raise DataError(f"{source}: frame_uncertainty holds a standard deviation that is not finite and >= 0, "
                            "or a pivot that is not 3 finite numbers")
        return cls(std, pivot, origin)

    @classmethod
    def of_trial(cls, meta: dict[str, Any], name: str) -> FrameUncertainty | None:
        """The frame uncertainty trial.json keeps (``import.frame_uncertainty``); None without one."""
        section = TrialMeta(meta, name).imported
        stored = section.get("frame_uncertainty") if section is not None else None
        return None if stored is None else cls.from_dict(stored, f"trial '{name}'")

    @classmethod
    def of_calibration(cls, calibration: FrameCalibration) -> FrameUncertainty:
        """The standard deviations of a calibration's planar frame corrections, and of its determined origin
        corrections (0 for the others)."""
        corrections = calibration.corrections
        origin = [corrections[name].std if name in corrections and corrections[name].determined else 0.0
                  for name in UNCERTAIN_ORIGIN]
        return cls(np.array([corrections[name].std for name in UNCERTAIN_CORRECTIONS]),
                   np.asarray(calibration.pivot, dtype=float), np.array(origin, dtype=float))


def corrected_frames(frames: ImportFrames, calibration: FrameCalibration) -> ImportFrames:
    """The import frames that apply ``calibration``'s corrections at import: the turn and shift composed
    in front of ``--box-transform`` (arm base frame), the origin offset behind ``--box-offset`` (the
    box's axes), the delay added to the box stream's, the tool offset's correction behind
    ``--tool-offset`` (the pusher pose's axes)."""
    values = calibration.applied()
    tool = RigidTransform(np.array([values.get(name, 0.0) for name in TOOL_PARAMETERS]))
    turn = from_axis_angle(np.array([0.0, 0.0, 1.0]), values["dyaw_rad"])
    shift = np.array([values["dx_m"], values["dy_m"], values["dz_m"]])
    correction = RigidTransform(calibration.pivot + shift - rotate(turn, calibration.pivot), turn)
    origin = RigidTransform(np.array([values["ox_m"], values["oy_m"], 0.0]))
    return ImportFrames(correction.compose(frames.box_transform), frames.box_offset.compose(origin),
                        frames.box_delay_s + values["delay_s"], frames.tool_offset.compose(tool))


def _option(transform: RigidTransform) -> str:
    return ",".join(f"{v:.9g}" for v in (*transform.translation, *transform.quaternion))


def frames_document(calibration: FrameCalibration, imported: ImportFrames) -> dict[str, Any]:
    """The frames file: the import options that apply the calibration, and what it found."""
    frames = corrected_frames(imported, calibration)
    return {
        "format": FRAMES_FORMAT,
        "box_transform": _option(frames.box_transform),
        "box_offset": _option(frames.box_offset),
        "box_delay_s": float(frames.box_delay_s),
        "tool_offset": _option(frames.tool_offset),
        "frame_uncertainty": FrameUncertainty.of_calibration(calibration).as_dict(),
        "calibration": {
            "trials": calibration.trials,
            "pivot_m": [float(v) for v in calibration.pivot],
            "contact_samples": calibration.contact_samples,
            "pusher_turn_deg": calibration.pusher_turn_deg,
            **({"tool_note": calibration.tool_note} if calibration.tool_note else {}),
            "corrections": {name: c.as_dict() for name, c in calibration.corrections.items()},
            "residuals": {"before": calibration.before.as_dict(), "after": calibration.after.as_dict()},
            "imported_with": {"box_transform": _option(imported.box_transform),
                              "box_offset": _option(imported.box_offset), "box_delay_s": imported.box_delay_s,
                              "tool_offset": _option(imported.tool_offset)},
        },
    }


def read_frames_file(path: str | Path) -> FramesOptions:
    """The import options of a frames file.

    Raises
    ------
    Sim2RealError
        Not a readable frames file: one line naming the file and what is wrong.
    """
    import yaml

    from sim2real.paths import read_text_file

    if not Path(path).is_file():
        raise InputError(f"frames file {path}: not a file", option="frames")
    try:
        document = yaml.safe_load(read_text_file(path, "frames file"))
    except yaml.YAMLError as err:
        raise DataError(f"frames file {path}: cannot read it ({' '.join(str(err).split())[:200]})",
                        option="frames") from None
    if not isinstance(document, dict) or document.get("format") != FRAMES_FORMAT:
        raise DataError(f"frames file {path}: not a frames file (format {FRAMES_FORMAT}, written by sim2real "
                        "calibrate)", option="frames")
    try:
        delay = float(document["box_delay_s"])
        transform, offset = str(document["box_transform"]), str(document["box_offset"])
    except (KeyError, TypeError, ValueError):
        raise DataError(f"frames file {path}: needs box_transform, box_offset and box_delay_s",
                        option="frames") from None
    if not np.isfinite(delay) or abs(delay) > MAX_DELAY_S:
        raise DataError(f"frames file {path}: box_delay_s {delay!r} is not a delay within ±{MAX_DELAY_S:g} s",
                        option="frames")
    tool = document.get("tool_offset")
    if tool is not None and not isinstance(tool, str):
        raise DataError(f"frames file {path}: tool_offset is not x,y,z,qw,qx,qy,qz", option="frames")
    stored = document.get("frame_uncertainty")
    try:
        uncertainty = None if stored is None else FrameUncertainty.from_dict(stored, f"frames file {path}")
    except DataError as err:
        raise DataError(str(err), option="frames") from None
    return FramesOptions(transform, offset, delay, tool, uncertainty)

