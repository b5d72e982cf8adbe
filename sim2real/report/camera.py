"""What the report says about box poses that came from a camera: the detection rate and the pose noise at rest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sim2real.spatial import yaw
from sim2real.trials import TrialRecord
from sim2real.trials.meta import TrialMeta

#: A trial whose camera gave a pose for fewer of its images is flagged.
LOW_RATE = 0.5
#: The rest before the push: samples within this distance of the box's first pose (m), at most this long (s).
REST_RADIUS, REST_SPAN = 0.002, 1.0
#: Least samples for a noise figure.
MIN_REST_SAMPLES = 5


def rest_noise(trial: TrialRecord) -> tuple[float, float] | None:
    """The real box pose's noise while the box rests before the push: RMS distance from the rest mean (m) and
    the yaw's standard deviation (rad); None without enough resting samples."""
    box = trial.platforms["real"].box_pose if "real" in trial.platforms else None
    if box is None or len(box) < MIN_REST_SAMPLES:
        return None
    first = np.median(box.position[:MIN_REST_SAMPLES], axis=0)
    still = (np.linalg.norm(box.position - first, axis=1) < REST_RADIUS) & (box.t - box.t[0] <= REST_SPAN)
    count = int(np.argmin(still)) if not still.all() else len(still)  # the leading run of resting samples
    if count < MIN_REST_SAMPLES:
        return None
    rest = box.position[:count]
    headings = np.unwrap(yaw(box.quaternion[:count]))
    return float(np.sqrt(np.mean(np.sum((rest - rest.mean(axis=0)) ** 2, axis=1)))), float(np.std(headings))


def camera_sentence(trial: TrialRecord) -> tuple[str, bool] | None:
    """One sentence on the trial's camera (None when its box poses came from elsewhere) and whether it alarms."""
    tally = TrialMeta(trial.meta).camera
    if tally is None:
        return None
    images, poses = int(tally.get("images", 0)), int(tally.get("poses", 0))
    refused = _refusals(tally.get("refused"))
    text = f"Camera: {poses} of {images} images gave a box pose ({100 * poses / images:.1f} %" if images else \
        "Camera: no image in this trial's window ("
    text += f"; refused: {refused})" if refused else ")"
    noise = rest_noise(trial)
    if noise is not None:
        text += f"; pose noise at rest {1000 * noise[0]:.2f} mm, {np.degrees(noise[1]):.2f}° of yaw"
    return text + ".", (poses / images if images else 0.0) < LOW_RATE


def camera_summary(label: str, trials: Sequence[TrialRecord]) -> tuple[str, bool] | None:
    """One sentence on a run's camera over all its trials (None: no camera), and whether it alarms."""
    tallies = [(t, TrialMeta(t.meta).camera) for t in trials]
    seen = [(t, tally) for t, tally in tallies if tally is not None]
    if not seen:
        return None
    images = sum(int(tally.get("images", 0)) for _, tally in seen)
    poses = sum(int(tally.get("poses", 0)) for _, tally in seen)
    low = [t.name for t, tally in seen if int(tally.get("images", 0)) == 0
           or int(tally.get("poses", 0)) / int(tally["images"]) < LOW_RATE]
    noises = [n for n in (rest_noise(t) for t, _ in seen) if n is not None]
    text = (f"Run '{label}': box poses from a camera in {len(seen)} trial(s): {poses} of {images} images gave a pose "
            f"({100 * poses / max(images, 1):.1f} %)")
    if noises:
        text += (f"; pose noise at rest, median over trials, {1000 * float(np.median([n[0] for n in noises])):.2f} mm"
                 f" and {float(np.degrees(np.median([n[1] for n in noises]))):.2f}° of yaw")
    if low:
        text += f"; below {100 * LOW_RATE:.0f} % in {', '.join(low)}"
    return text + ".", bool(low)


def _refusals(refused: Any) -> str:
    if not isinstance(refused, Mapping):
        return ""
    return ", ".join(f"{reason} {int(count)}" for reason, count in sorted(refused.items()) if int(count))
