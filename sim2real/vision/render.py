"""A synthetic pinhole camera: grey images of a box with its tags (or of any tagged plate), for the stand-in.

Each visible face is a textured rectangle mapped into the image by its homography (OpenCV's perspective
warp with bilinear sampling from a mip level near the image's own resolution, so edges are antialiased
rather than aliased), shaded by its angle to the line of sight, over a uniform table. Then the optics and
the sensor: Gaussian blur (defocus), exposure gain and Gaussian pixel noise. Not modelled: lens distortion
(the renderer refuses a camera with distortion), motion blur, shadows, and anything in front of the box
(the pusher, the arm): a tag the pusher covers in reality is seen here.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

from sim2real.errors import InputError
from sim2real.spatial.rigid import apply, invert
from sim2real.vision.camera import PinholeCamera
from sim2real.vision.tags import FACES, FAMILIES, BoxTags, TagMount, face_frame

FloatArray = NDArray[np.float64]
#: Texture resolution of the finest mip level, px per m (4 px per mm).
TEXTURE_PX_PER_M = 4000.0
#: Grey levels (0-255) of a white surface facing the camera and of the table.
WHITE, TABLE = 235.0, 95.0
#: Closest distance to the camera a face may have, m (nearer faces are not drawn).
NEAR = 0.02


@dataclass(frozen=True)
class Optics:
    """What the camera's optics and sensor do to an image.

    Attributes
    ----------
    blur_px : float
        Standard deviation of the Gaussian blur, px (0: sharp).
    noise : float
        Standard deviation of the pixel noise, grey levels (0-255 scale).
    gain : float
        Exposure gain (1: a white face facing the camera is 235 of 255).
    """

    blur_px: float = 0.7
    noise: float = 2.0
    gain: float = 1.0

    def __post_init__(self) -> None:
        if not (self.blur_px >= 0.0 and self.noise >= 0.0 and self.gain > 0.0) or not np.isfinite(
                [self.blur_px, self.noise, self.gain]).all():
            raise InputError("camera optics need blur ≥ 0 px, noise ≥ 0 grey levels and a positive gain")


@dataclass(frozen=True)
class TexturedPlane:
    """A flat textured rectangle: its frame's x (right) and y (down) span the texture, z is its inward normal.

    Attributes
    ----------
    width, height : float
        Extent along the plane's x and y, m, centred on its origin.
    levels : tuple of ndarray
        Mip levels of the grey texture (float32, 0-1), finest first, each half the previous resolution (a
        level's extent is the finest level's, cut to even texel counts at most one texel short).
    px_per_m : float
        Resolution of the finest level.
    """

    width: float
    height: float
    levels: tuple[NDArray[np.float32], ...]
    px_per_m: float = TEXTURE_PX_PER_M

    def corners(self) -> FloatArray:
        """The plane's corners (4, 3) in its own frame (top left, top right, bottom right, bottom left), m."""
        w, h = self.width / 2.0, self.height / 2.0
        return np.array([[-w, -h, 0.0], [w, -h, 0.0], [w, h, 0.0], [-w, h, 0.0]])


def tag_texture(family: str, tag_id: int, cells_px: int) -> NDArray[np.uint8]:
    """The tag's black square (8 × 8 cells for 36h11, border included), ``cells_px`` pixels per cell, 0/255."""
    dictionary = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, FAMILIES[family]))
    cells = dictionary.markerSize + 2
    return np.asarray(cv2.aruco.generateImageMarker(dictionary, tag_id, cells * cells_px, borderBits=1), np.uint8)


def _mips(texture: NDArray[np.float32], count: int = 6) -> tuple[NDArray[np.float32], ...]:
    levels = [texture]
    for _ in range(count - 1):
        if min(levels[-1].shape) < 8:
            break
        height, width = levels[-1].shape
        # 2 × 2 averages: texel j of the next level is centred where texels 2j and 2j + 1 meet (pyrDown would
        # centre it on texel 2j and shift the texture by half a texel per level)
        levels.append(np.asarray(cv2.resize(levels[-1][: height // 2 * 2, : width // 2 * 2], (width // 2, height // 2),
                                            interpolation=cv2.INTER_AREA), np.float32))
    return tuple(levels)


def plane_of(width: float, height: float, tags: list[tuple[TagMount, FloatArray]], family: str) -> TexturedPlane:
    """A white plane with tags drawn on it.

    Parameters
    ----------
    width, height : float
        The plane's extent, m.
    tags : list of (TagMount, ndarray (4, 4))
        Each tag and ``plane_from_tag``: where it lies on the plane (its z along the plane's z).
    family : str
    """
    scale = TEXTURE_PX_PER_M
    shape = (max(8, round(height * scale)), max(8, round(width * scale)))
    texture = np.full(shape, 1.0, np.float32)
    for mount, plane_from_tag in tags:
        cells = tag_texture(family, mount.tag_id, 32).astype(np.float32) / 255.0
        side = cells.shape[0]
        corners = apply(plane_from_tag, np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]]) * mount.size / 2)
        target = (corners[:, :2] + [width / 2.0, height / 2.0]) * scale - 0.5
        source = np.array([[0, 0], [side, 0], [side, side], [0, side]], np.float32) - 0.5
        homography = cv2.getPerspectiveTransform(source.astype(np.float32), target.astype(np.float32))
        warped = cv2.warpPerspective(cells, homography, shape[::-1], flags=cv2.INTER_LINEAR, borderValue=1.0)
        cover = cv2.warpPerspective(np.ones_like(cells), homography, shape[::-1], flags=cv2.INTER_LINEAR)
        texture = texture * (1.0 - cover) + warped * cover
    return TexturedPlane(width, height, _mips(texture.astype(np.float32)), scale)


def box_planes(half_size: FloatArray, tags: BoxTags) -> list[tuple[FloatArray, TexturedPlane]]:
    """The box's six faces as ``(box_from_face (4, 4), plane)``, with the tags that lie flat on each drawn on it."""
    planes = []
    for face in FACES:
        box_from_face, width, height = face_frame(face, half_size)
        face_from_box = invert(box_from_face)
        on_face = [(m, face_from_box @ m.box_from_tag) for m in tags.mounts]
        own = [(m, pose) for m, pose in on_face if abs(pose[2, 3]) < 1e-6 and pose[2, 2] > 1.0 - 1e-6]
        planes.append((box_from_face, plane_of(width, height, own, tags.family)))
    return planes


def _draw(image: NDArray[np.float32], camera: PinholeCamera, camera_from_plane: FloatArray,
          plane: TexturedPlane) -> None:
    corners = apply(camera_from_plane, plane.corners())
    normal = camera_from_plane[:3, 2]  # inward
    centre = camera_from_plane[:3, 3]
    if np.any(corners[:, 2] < NEAR) or normal @ centre <= 0.0:  # behind the camera, or seen from inside
        return
    pixels = camera.project(corners)
    image_px_per_m = camera.matrix[0, 0] / float(np.min(corners[:, 2]))
    level = int(np.clip(np.floor(np.log2(max(plane.px_per_m / image_px_per_m, 1.0))), 0, len(plane.levels) - 1))
    texture = plane.levels[level]
    th, tw = texture.shape
    left, top = np.floor(np.maximum(pixels.min(axis=0) - 2.0, 0.0)).astype(int)
    right, bottom = np.ceil(np.minimum(pixels.max(axis=0) + 2.0, [camera.width - 1, camera.height - 1])).astype(int)
    if right <= left or bottom <= top:
        return  # outside the image
    source = np.array([[0, 0], [tw, 0], [tw, th], [0, th]], np.float32) - 0.5
    homography = cv2.getPerspectiveTransform(source, (pixels - [left, top]).astype(np.float32))
    size = (int(right - left + 1), int(bottom - top + 1))
    shade = 0.35 + 0.65 * abs(float(normal @ centre) / float(np.linalg.norm(centre)))
    drawn = cv2.warpPerspective(texture * np.float32(shade), homography, size, flags=cv2.INTER_LINEAR)
    cover = cv2.warpPerspective(np.ones_like(texture), homography, size, flags=cv2.INTER_LINEAR)
    window = image[top:bottom + 1, left:right + 1]
    window *= 1.0 - cover
    window += drawn


def render(camera: PinholeCamera, planes: list[tuple[FloatArray, TexturedPlane]], optics: Optics,
           rng: np.random.Generator) -> NDArray[np.uint8]:
    """One grey image (height, width), uint8, of textured planes over the table.

    Parameters
    ----------
    camera : PinholeCamera
        Distortion-free.
    planes : list of (ndarray (4, 4), TexturedPlane)
        ``camera_from_plane`` and the plane; a plane seen from behind is not drawn. Overlapping planes are
        drawn in the order given (draw the farther first); a convex body's visible faces do not overlap.
    optics : Optics
    rng : numpy.random.Generator
        The pixel noise's generator.
    """
    if camera.has_distortion:
        raise InputError("the synthetic camera draws distortion-free images: give it a camera without distortion")
    image = np.full((camera.height, camera.width), TABLE / WHITE, np.float32)
    for camera_from_plane, plane in planes:
        _draw(image, camera, camera_from_plane, plane)
    return exposed(image, optics, rng)


def exposed(image: NDArray[np.float32], optics: Optics, rng: np.random.Generator) -> NDArray[np.uint8]:
    """What the camera makes of a scene's brightness: ``optics``' blur, gain and pixel noise, then grey levels.

    Parameters
    ----------
    image : ndarray (height, width), float32
        Brightness, 1 for the tags' white (:data:`WHITE` grey levels at gain 1).
    optics : Optics
    rng : numpy.random.Generator
        The pixel noise's generator.

    Returns
    -------
    ndarray (height, width), uint8
    """
    image = np.asarray(image, np.float32)
    if optics.blur_px > 0.0:
        image = np.asarray(cv2.GaussianBlur(image, (0, 0), optics.blur_px), np.float32)
    image = image * np.float32(WHITE * optics.gain)
    if optics.noise > 0.0:  # OpenCV's generator, seeded from ``rng`` per image: a quarter of NumPy's time here
        cv2.setRNGSeed(int(rng.integers(2**31)))
        noise = np.empty_like(image)
        cv2.randn(noise, np.zeros(1), np.full(1, float(optics.noise)))
        image += noise
    return np.clip(image + 0.5, 0, 255).astype(np.uint8)


class BoxRenderer:
    """Images of one tagged box seen by one camera (the faces' textures are built once).

    Parameters
    ----------
    camera : PinholeCamera
    half_size : ndarray, shape (3,)
        The box's half extents, m.
    tags : BoxTags
    optics : Optics
    seed : int
        Seed of the pixel noise.
    """

    def __init__(self, camera: PinholeCamera, half_size: FloatArray, tags: BoxTags, optics: Optics | None = None,
                 seed: int = 0) -> None:
        self.camera = camera
        self.optics = optics or Optics()
        self._faces = box_planes(half_size, tags)
        self._rng = np.random.default_rng(seed)

    def render(self, camera_from_box: FloatArray) -> NDArray[np.uint8]:
        """The image of the box at ``camera_from_box`` (4, 4): grey, (height, width), uint8."""
        planes = [(camera_from_box @ box_from_face, plane) for box_from_face, plane in self._faces]
        planes.sort(key=lambda item: -float(np.linalg.norm(item[0][:3, 3])))
        return render(self.camera, planes, self.optics, self._rng)
