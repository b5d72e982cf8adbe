"""AprilTags on a box: the tag family, each tag's size and where it sits on the box.

Frames: the box frame (origin at the box's geometric centre, axes along its edges, m) and each tag's
frame (origin at the tag's centre, x to the right and y down as the tag is read, z into the face), so
that a tag's corners are, in its own frame, ``(-s/2, -s/2, 0)`` (top left), ``(s/2, -s/2, 0)``,
``(s/2, s/2, 0)``, ``(-s/2, s/2, 0)``: OpenCV's corner order. ``s`` is the side of the tag's black
square (the tag "size" AprilTag's tools print).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from sim2real.errors import InputError
from sim2real.spatial.rigid import apply, rigid
from sim2real.vision.names import CORNER_REFINEMENTS, FAMILIES

FloatArray = NDArray[np.float64]
__all__ = ["CORNER_REFINEMENTS", "FACES", "FAMILIES", "BoxTags", "TagMount", "box_tags", "face_frame",
           "face_mount", "tag_corners"]

#: The box's faces by outward normal in the box frame: name → (normal axis, sign).
FACES = {"+x": (0, 1.0), "-x": (0, -1.0), "+y": (1, 1.0), "-y": (1, -1.0), "+z": (2, 1.0), "-z": (2, -1.0)}


@dataclass(frozen=True)
class TagMount:
    """One tag on the box.

    Attributes
    ----------
    tag_id : int
        The tag's id in its family.
    size : float
        Side of the tag's black square, m.
    box_from_tag : ndarray, shape (4, 4)
        The tag's frame in the box frame.
    face : str
        The face it is on (``+x`` … ``-z``), for messages.
    """

    tag_id: int
    size: float
    box_from_tag: FloatArray
    face: str = ""

    def corners_in_box(self) -> FloatArray:
        """The tag's four corners in the box frame (4, 3), m, in OpenCV's order."""
        return apply(self.box_from_tag, tag_corners(self.size))


@dataclass(frozen=True)
class BoxTags:
    """The tags of one box: their family and mounts.

    Attributes
    ----------
    family : str
        A key of :data:`FAMILIES`.
    mounts : tuple of TagMount
        Distinct ids.
    """

    family: str
    mounts: tuple[TagMount, ...]

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise InputError(f"unknown tag family {self.family!r} (one of {', '.join(FAMILIES)})")
        ids = [m.tag_id for m in self.mounts]
        if not ids or len(set(ids)) != len(ids):
            raise InputError(f"a box needs at least one tag and distinct tag ids, not {ids}")

    def mount(self, tag_id: int) -> TagMount | None:
        """The mount of ``tag_id``, or None when the tag is not on this box."""
        return next((m for m in self.mounts if m.tag_id == tag_id), None)


def tag_corners(size: float) -> FloatArray:
    """A tag's corners (4, 3) in its own frame, m, in OpenCV's order (top left, clockwise as read)."""
    h = size / 2.0
    return np.array([[-h, -h, 0.0], [h, -h, 0.0], [h, h, 0.0], [-h, h, 0.0]])


def face_frame(face: str, half_size: FloatArray) -> tuple[FloatArray, float, float]:
    """A face's frame and extent: read upright from outside, x to the right, y down, z into the box.

    Parameters
    ----------
    face : str
        ``+x``, ``-x``, ``+y``, ``-y``, ``+z`` or ``-z``: the face's outward normal.
    half_size : ndarray, shape (3,)
        The box's half extents, m.

    Returns
    -------
    box_from_face : ndarray, shape (4, 4)
        Origin at the face's centre. On the side faces y is the box's −z; on the top and bottom it is
        the box's −x and +x.
    width, height : float
        The face's extent along its x and y, m.
    """
    if face not in FACES:
        raise InputError(f"unknown box face {face!r} (one of {', '.join(FACES)})")
    axis, sign = FACES[face]
    normal = np.zeros(3)
    normal[axis] = sign
    down = np.array([0.0, 0.0, -1.0]) if axis != 2 else np.array([-sign, 0.0, 0.0])
    right = np.cross(down, -normal)  # x = y × z with z = -normal
    half = np.asarray(half_size, dtype=float)
    frame = rigid(np.column_stack([right, down, -normal]), normal * half[axis])
    return frame, 2.0 * float(np.abs(right) @ half), 2.0 * float(np.abs(down) @ half)


def face_mount(face: str, half_size: FloatArray, tag_id: int, size: float) -> TagMount:
    """A tag centred on one face of a box, upright as :func:`face_frame` reads the face.

    Parameters
    ----------
    face : str
    half_size : ndarray, shape (3,)
        The box's half extents, m.
    tag_id : int
    size : float
        The tag's black square, m; it must fit on the face.
    """
    frame, width, height = face_frame(face, half_size)
    if not 0.0 < size <= min(width, height):
        raise InputError(f"a {size * 1000:.0f} mm tag does not fit on the box's {face} face")
    return TagMount(tag_id, size, frame, face)


def box_tags(half_size: FloatArray, size: float = 0.05, family: str = "36h11",
             faces: tuple[str, ...] = ("+z", "+x", "-x", "+y", "-y")) -> BoxTags:
    """Tags centred on the box's faces, ids 0, 1, … in the order of ``faces`` (the default: all but the bottom)."""
    return BoxTags(family, tuple(face_mount(f, half_size, i, size) for i, f in enumerate(faces)))
