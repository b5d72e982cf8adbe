"""Which camera images of a recording gave a box pose, and the per-trial tally an import records.

A recording whose box poses come from camera images (``import bag --box-image``) keeps, besides the
poses, one entry per image read: its header stamp and receive time (ns) and why it gave no pose (the
:class:`~sim2real.vision.pose.Refusal` reason, or ``""`` when it gave one). Each trial's trial.json
then records the tally of the images in its window (``import.camera.tally``), and a trial where fewer
than :data:`MIN_DETECTION_RATE` of its images gave a pose says so (``import.camera.low_rate``).

NumPy and the standard library only here: reading a CSV recording loads no OpenCV.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sim2real.vision.estimate import DetectionTally

#: Fewest of a trial's images that must give a pose before the import warns (the trial is still imported).
MIN_DETECTION_RATE = 0.5


@dataclass(frozen=True)
class ImageDetections:
    """The images of one camera stream and what each gave.

    Attributes
    ----------
    topic : str
        The image topic.
    stamp_ns : numpy.ndarray of int64, shape (M,)
        Each image's header stamp (acquisition time), ns.
    receive_ns : numpy.ndarray of int64, shape (M,)
        Each image's receive (bag log) time, ns.
    refused : tuple of str, length M
        Why each image gave no pose (``no_tag``, ``ambiguous``, ``reprojection``, ``duplicate``,
        ``undecodable``), ``""`` for an image that gave one.
    info : dict
        What trial.json keeps of the camera beside the tally (set-up file, topics, intrinsics, tags,
        ``base_from_camera``).
    """

    topic: str
    stamp_ns: np.ndarray
    receive_ns: np.ndarray
    refused: tuple[str, ...]
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.refused)
        object.__setattr__(self, "stamp_ns", np.asarray(self.stamp_ns, dtype=np.int64).reshape(n))
        object.__setattr__(self, "receive_ns", np.asarray(self.receive_ns, dtype=np.int64).reshape(n))

    def shifted(self, shift_ns: int) -> ImageDetections:
        """The same images ``shift_ns`` earlier on both clocks (a box stream's delay, ns)."""
        return dataclasses.replace(self, stamp_ns=self.stamp_ns - shift_ns, receive_ns=self.receive_ns - shift_ns)

    def tally(self, clock: str = "header", window: tuple[int, int] | None = None) -> DetectionTally:
        """The tally of the images timed within ``window`` (ns on ``clock``, both ends included; None: all)."""
        from sim2real.vision.estimate import DetectionTally

        t = self.stamp_ns if clock == "header" else self.receive_ns
        inside = np.ones(t.shape, bool) if window is None else (t >= window[0]) & (t <= window[1])
        reasons = [reason for reason, keep in zip(self.refused, inside, strict=True) if keep]
        refused = Counter(reason for reason in reasons if reason)
        return DetectionTally(images=len(reasons), poses=len(reasons) - sum(refused.values()), refused=refused)

    def trial_record(self, clock: str, window: tuple[int, int]) -> dict[str, Any]:
        """trial.json ``import.camera`` of a trial whose window is ``window`` (ns on ``clock``)."""
        tally = self.tally(clock, window)
        return {"image_topic": self.topic, **self.info, "tally": tally.as_dict(),
                "min_rate": MIN_DETECTION_RATE, "low_rate": tally.rate < MIN_DETECTION_RATE}


def tally_lines(trial: str, record: dict[str, Any]) -> list[str]:
    """The console lines of one trial's detection tally (:meth:`ImageDetections.trial_record`): the tally, and a
    warning when the rate is below :data:`MIN_DETECTION_RATE`."""
    from sim2real.vision.estimate import DetectionTally

    counts = record["tally"]
    tally = DetectionTally(counts["images"], counts["poses"], Counter(counts["refused"]))
    lines = [f"trial {trial}: camera {record['image_topic']}: {tally.summary()}"]
    if record["low_rate"]:
        lines.append(f"WARNING: trial {trial}: only {100 * tally.rate:.1f} % of its images gave a box pose (below "
                     f"{100 * MIN_DETECTION_RATE:.0f} %); imported, with import.camera.low_rate in its trial.json: "
                     f"check the tags, the lighting and the camera set-up file")
    return lines
