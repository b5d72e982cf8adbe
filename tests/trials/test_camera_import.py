"""Box poses from camera images in a bag (``sim2real.trials.camera_source``, ``camera_tally``), read with
``read_bag`` and imported with ``import_recordings``, on bags of rendered images of a tagged box along a known path
(``tests/fixtures/camera_bags.py``): one pose per image, in the arm base frame, stamped with the image's header
stamp; images without a pose dropped and counted; each trial's tally in its trial.json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fixtures.camera_bags import (
    BASE_FROM_CAMERA,
    IMAGE_LATENCY_NS,
    IMAGE_TOPIC,
    INFO_TOPIC,
    PUSHER_TOPIC,
    SETUP,
    SIZE,
    T0_NS,
    CameraBag,
    box_pose,
    image_stamps_ns,
    write_camera_bag,
    yaw_of,
)
from rosbags.typesys import Stores, get_typestore

from sim2real.errors import DataError, InputError
from sim2real.trials.bag_import import BagSelection, check_bag_topics, parse_pose_source, read_bag
from sim2real.trials.camera_source import CameraSelection, camera_from_info, camera_selection, decode_image
from sim2real.trials.camera_tally import ImageDetections, tally_lines
from sim2real.trials.recording import ImportSettings, parse_split
from sim2real.trials.recording_import import box_delayed, import_recordings
from sim2real.trials.trial_object import object_from_options
from sim2real.vision.camera import PinholeCamera

OBJECT = object_from_options(list(SIZE), "sphere", 0.01, box_mass=0.5, name="tagged_cube")
TYPES = get_typestore(Stores.ROS2_KILTED).types


def _camera() -> CameraSelection:
    return camera_selection(IMAGE_TOPIC, SETUP, OBJECT.parameters)


def _selection(pusher: bool = True) -> BagSelection:
    camera = _camera()
    return BagSelection(box=camera.source, pusher=parse_pose_source(PUSHER_TOPIC, "pusher_pose") if pusher else None,
                        camera=camera)


@pytest.fixture(scope="module")
def bags(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("camera_bags")
    specs = {name: CameraBag(encoding=name) for name in ("mono8", "rgb8", "bgr8", "png", "jpeg")}
    specs |= {"gaps": CameraBag(blank=frozenset({3, 10, 11})),
              "low": CameraBag(blank=frozenset(range(0, 48, 2)) | {1, 5, 9, 13}),
              "blank": CameraBag(blank=frozenset(range(48))),
              "yuv": CameraBag(encoding="yuv422"),
              "no_info": CameraBag(camera_info=False),
              "fisheye": CameraBag(model="equidistant"),
              "corrupt": CameraBag(encoding="jpeg", corrupt=frozenset({7, 8})),
              "small_info": CameraBag(info_camera=PinholeCamera.ideal(320, 240, 300.0))}
    return {name: write_camera_bag(root / name, spec) for name, spec in specs.items()}


def _check_truth(position: np.ndarray, quaternion: np.ndarray, stamp_ns: np.ndarray) -> None:
    """Poses within 3 mm and 1° of yaw of the truth at their stamps (and a level box within 1°)."""
    true_position, true_quaternion = box_pose((stamp_ns - T0_NS) / 1e9)
    assert np.max(np.linalg.norm(position - true_position, axis=1)) < 0.003
    yaw_error = np.angle(np.exp(1j * (yaw_of(quaternion) - yaw_of(true_quaternion))))
    assert np.max(np.abs(np.degrees(yaw_error))) < 1.0
    up = 1.0 - 2.0 * (quaternion[:, 1] ** 2 + quaternion[:, 2] ** 2) / np.sum(quaternion**2, axis=1)
    assert np.min(up) > np.cos(np.radians(1.0))


@pytest.mark.parametrize("encoding", ["mono8", "rgb8", "bgr8", "png", "jpeg"])
def test_each_image_gives_one_box_pose_in_the_base_frame_at_its_header_stamp(bags: dict[str, Path],
                                                                            encoding: str) -> None:
    calls: list[tuple[int, int]] = []
    recording = read_bag(bags[encoding], _selection(), progress=lambda done, total: calls.append((done, total)))
    stamps = image_stamps_ns()
    box = recording.box
    np.testing.assert_array_equal(box.stamp_ns, stamps)  # the images' header stamps, not their log times
    np.testing.assert_array_equal(box.receive_ns, stamps + IMAGE_LATENCY_NS)
    _check_truth(box.position, box.quaternion, box.stamp_ns)
    assert recording.frame == "link_base" and box.source == IMAGE_TOPIC and box.has_orientation
    assert recording.pusher is not None and len(recording.pusher) == 120
    assert recording.camera is not None
    assert recording.camera.tally().as_dict() == {"images": 48, "poses": 48, "rate": 1.0, "refused": {}}
    info = recording.camera.info
    assert info["encodings"] == [encoding] and info["camera_info_topic"] == INFO_TOPIC
    assert info["intrinsics"]["width"] == 640 and info["intrinsics"]["k"][0] == 615.0
    assert calls[-1] == (48, 48) and len(calls) == 48


def test_images_without_a_pose_are_dropped_and_counted(bags: dict[str, Path]) -> None:
    recording = read_bag(bags["gaps"], _selection())
    kept = np.setdiff1d(np.arange(48), [3, 10, 11])
    np.testing.assert_array_equal(recording.box.stamp_ns, image_stamps_ns()[kept])
    _check_truth(recording.box.position, recording.box.quaternion, recording.box.stamp_ns)
    assert recording.camera is not None
    tally = recording.camera.tally()
    assert (tally.images, tally.poses, dict(tally.refused)) == (48, 45, {"no_tag": 3})
    assert recording.camera.refused[3] == "no_tag" and recording.camera.refused[4] == ""


def test_images_that_do_not_decode_are_counted_as_undecodable(bags: dict[str, Path]) -> None:
    recording = read_bag(bags["corrupt"], _selection())
    assert recording.camera is not None
    assert recording.camera.tally().as_dict() == {"images": 48, "poses": 46, "rate": 0.9583,
                                                  "refused": {"undecodable": 2}}
    np.testing.assert_array_equal(recording.box.stamp_ns, np.delete(image_stamps_ns(), [7, 8]))


def test_the_tally_of_a_trial_counts_the_images_in_its_window_on_its_clock() -> None:
    stamps = np.array([0, 10, 20, 30, 40], np.int64)
    images = ImageDetections("/cam", stamps, stamps + 5, ("", "no_tag", "", "ambiguous", "no_tag"), {"refine": "x"})
    assert images.tally().as_dict() == {"images": 5, "poses": 2, "rate": 0.4,
                                        "refused": {"ambiguous": 1, "no_tag": 2}}
    assert images.tally("header", (10, 30)).as_dict()["refused"] == {"ambiguous": 1, "no_tag": 1}
    assert images.tally("receive", (10, 30)).images == 2  # receive times 15, 25
    record = images.trial_record("header", (0, 20))
    assert record["tally"] == {"images": 3, "poses": 2, "rate": 0.6667, "refused": {"no_tag": 1}}
    assert record["image_topic"] == "/cam" and record["refine"] == "x" and record["low_rate"] is False
    low = images.trial_record("header", (10, 40))
    assert low["low_rate"] is True and low["min_rate"] == 0.5
    lines = tally_lines("t1", low)
    assert lines[0] == "trial t1: camera /cam: 1 of 4 images gave a pose (25.0 %); refused: ambiguous 1, no_tag 2"
    assert len(lines) == 2 and lines[1].startswith("WARNING: trial t1: only 25.0 % of its images gave a box pose")
    assert tally_lines("t0", record) == ["trial t0: camera /cam: 2 of 3 images gave a pose (66.7 %); refused: "
                                         "no_tag 1"]
    np.testing.assert_array_equal(images.shifted(3).stamp_ns, stamps - 3)


def test_each_trial_json_keeps_its_tally_and_a_low_rate_is_flagged(bags: dict[str, Path], tmp_path: Path) -> None:
    lines: list[str] = []
    settings = ImportSettings(object=OBJECT)
    (trial,) = import_recordings([read_bag(bags["low"], _selection())], tmp_path / "run", settings, log=lines.append)
    camera = json.loads((trial.path / "trial.json").read_text())["import"]["camera"]
    assert camera["tally"] == {"images": 48, "poses": 20, "rate": 0.4167, "refused": {"no_tag": 28}}
    assert camera["low_rate"] is True and camera["image_topic"] == IMAGE_TOPIC
    assert camera["tags"] == {"family": "36h11", "size_m": 0.06, "faces": ["+z", "+x", "-x", "+y", "-y"]}
    np.testing.assert_allclose(camera["base_from_camera"]["translation"], BASE_FROM_CAMERA[:3, 3])
    assert "trial low: camera /camera/color/image_raw: 20 of 48 images gave a pose (41.7 %); refused: no_tag 28" \
        in lines
    assert sum(line.startswith("WARNING: trial low: only 41.7 %") for line in lines) == 1
    assert trial.samples["box_pose"] == 20


def test_split_trials_count_the_images_of_their_own_window(bags: dict[str, Path], tmp_path: Path) -> None:
    windows = tmp_path / "windows.csv"
    windows.write_text("0.0,0.99\n1.0,2.4\n")
    settings = ImportSettings(object=OBJECT, split=parse_split(f"windows:{windows}"), force=True)
    trials = import_recordings([read_bag(bags["gaps"], _selection())], tmp_path / "run", settings)
    tallies = [json.loads((t.path / "trial.json").read_text())["import"]["camera"]["tally"] for t in trials]
    assert tallies == [{"images": 20, "poses": 17, "rate": 0.85, "refused": {"no_tag": 3}},
                       {"images": 28, "poses": 28, "rate": 1.0, "refused": {}}]


def test_a_box_delay_moves_the_images_with_the_box(bags: dict[str, Path]) -> None:
    recording = read_bag(bags["gaps"], _selection(pusher=False))
    delayed = box_delayed(recording, 0.1)
    assert delayed.camera is not None and recording.camera is not None
    np.testing.assert_array_equal(delayed.camera.stamp_ns, recording.camera.stamp_ns - 100_000_000)
    np.testing.assert_array_equal(delayed.box.stamp_ns, recording.box.stamp_ns - 100_000_000)


def _raw(encoding: str, pixels: np.ndarray, step: int | None = None) -> object:
    height, width = pixels.shape[:2]
    row = np.ascontiguousarray(pixels).reshape(height, -1)
    step = row.shape[1] if step is None else step
    padded = np.zeros((height, step), np.uint8)
    padded[:, :row.shape[1]] = row
    return TYPES["sensor_msgs/msg/Image"](header=TYPES["std_msgs/msg/Header"](
        stamp=TYPES["builtin_interfaces/msg/Time"](sec=1, nanosec=0), frame_id=""), height=height, width=width,
        encoding=encoding, is_bigendian=0, step=step, data=padded.ravel())


def test_raw_images_decode_by_their_encoding_and_step() -> None:
    rng = np.random.default_rng(0)
    grey = rng.integers(0, 256, (6, 5), dtype=np.uint8)
    np.testing.assert_array_equal(decode_image(_raw("mono8", grey, step=8), "sensor_msgs/msg/Image", "/c"), grey)
    colour = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)
    as_rgb = decode_image(_raw("rgb8", colour, step=16), "sensor_msgs/msg/Image", "/c")
    as_bgr = decode_image(_raw("bgr8", colour[:, :, ::-1], step=15), "sensor_msgs/msg/Image", "/c")
    expected = np.round(colour @ np.array([0.299, 0.587, 0.114]))  # ITU-R BT.601 luma of R, G, B
    assert as_rgb is not None and as_rgb.shape == (6, 5) and np.max(np.abs(as_rgb - expected)) <= 1
    np.testing.assert_array_equal(as_rgb, as_bgr)
    truncated = _raw("mono8", grey)
    truncated.data = truncated.data[:-1]
    assert decode_image(truncated, "sensor_msgs/msg/Image", "/c") is None
    with pytest.raises(InputError, match=r"^image topic /c: image encoding '16UC1' is not read \(only mono8, "
                                         r"rgb8, bgr8; or a sensor_msgs/msg/CompressedImage topic\)$") as err:
        decode_image(_raw("16UC1", grey), "sensor_msgs/msg/Image", "/c")
    assert err.value.option == "box_image"  # the CLI prefixes --box-image
    garbage = TYPES["sensor_msgs/msg/CompressedImage"](header=truncated.header, format="jpeg",
                                                       data=np.arange(50, dtype=np.uint8))
    assert decode_image(garbage, "sensor_msgs/msg/CompressedImage", "/c") is None


class _Ros1Info:
    """A ROS 1 CameraInfo's fields (upper-case K and D)."""

    width, height, distortion_model = 320, 240, "plumb_bob"
    K = (300.0, 0.0, 160.0, 0.0, 301.0, 120.0, 0.0, 0.0, 1.0)
    D = (0.1, -0.05, 0.0, 0.0, 0.0)


def test_camera_info_gives_the_intrinsics_or_a_one_line_refusal() -> None:
    camera = camera_from_info(_Ros1Info(), "/info", "bag")
    assert (camera.width, camera.height, camera.matrix[1, 1]) == (320, 240, 301.0) and camera.has_distortion
    fisheye = _Ros1Info()
    fisheye.distortion_model = "equidistant"
    with pytest.raises(InputError, match=r"^bag bag: /info has distortion model 'equidistant'; the tag detector "
                                         r"reads plumb_bob, rational_polynomial"):
        camera_from_info(fisheye, "/info", "bag")
    blank = _Ros1Info()
    blank.K = (0.0,) * 9
    with pytest.raises(DataError, match=r"^bag bag: the CameraInfo on /info is not a calibrated camera: "):
        camera_from_info(blank, "/info", "bag")


def test_a_bag_without_what_the_camera_needs_is_refused_in_one_line(bags: dict[str, Path]) -> None:
    calls: list[int] = []
    with pytest.raises(InputError, match=f"^bag {bags['no_info']} has no topic {INFO_TOPIC} \\(the camera "
                                         "info, needed for the intrinsics\\); it has: ") as err:
        read_bag(bags["no_info"], _selection(), progress=lambda done, total: calls.append(done))
    assert err.value.option == "camera_info"
    assert calls == []  # refused before any image was read
    with pytest.raises(InputError, match=f"has no topic {INFO_TOPIC}"):
        check_bag_topics(bags["no_info"], _selection())
    with pytest.raises(InputError, match="image encoding 'yuv422' is not read"):
        read_bag(bags["yuv"], _selection())
    with pytest.raises(InputError, match="distortion model 'equidistant'"):
        read_bag(bags["fisheye"], _selection())
    with pytest.raises(DataError, match=f"^bag {bags['small_info']}: the images on {IMAGE_TOPIC} are 640 × 480 px, "
                                        f"but the CameraInfo on {INFO_TOPIC} is for 320 × 240 px: give this "
                                        "camera's camera info$"):
        read_bag(bags["small_info"], _selection())
    with pytest.raises(InputError, match=f"^bag {bags['blank']}: none of the 48 images on {IMAGE_TOPIC} gave a box "
                                         r"pose \(0 of 48 images gave a pose \(0.0 %\); refused: no_tag 48\)"):
        read_bag(bags["blank"], _selection())
    small = camera_selection(IMAGE_TOPIC, SETUP, OBJECT.parameters, camera_info_topic=PUSHER_TOPIC)
    with pytest.raises(InputError, match=f"^camera-info topic {PUSHER_TOPIC}: message type "
                                         "geometry_msgs/msg/PoseStamped is not sensor_msgs/msg/CameraInfo$"):
        read_bag(bags["mono8"], BagSelection(box=small.source, camera=small))


def test_tags_that_do_not_fit_the_box_are_refused() -> None:
    with pytest.raises(InputError, match=r"^a 60 mm tag does not fit on the box's \+z face \(the tags of the camera"):
        camera_selection(IMAGE_TOPIC, SETUP, {"box.size_x": 0.05, "box.size_y": 0.05, "box.size_z": 0.05})

