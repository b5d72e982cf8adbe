"""``sim2real import bag --box-image TOPIC --camera FILE``: box poses from camera images of its AprilTags, end to
end on rosbag2 recordings of rendered images (``tests/fixtures/camera_bags.py``): the imported box poses follow the
known path (3 mm, 1° of yaw) at the images' header stamps, each trial's detection tally is printed and kept in its
trial.json (a warning below 50 %), compressed images work, and bad input is one line, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fixtures.camera_bags import (
    IMAGE_TOPIC,
    OBJECT,
    PUSHER_TOPIC,
    T0_NS,
    CameraBag,
    box_pose,
    image_stamps_ns,
    write_camera_bag,
    write_setup_file,
    yaw_of,
)

from sim2real.cli import main
from sim2real.trials import read_run

BAGS = {"mono8": CameraBag(), "jpeg": CameraBag(encoding="jpeg"),
        "low": CameraBag(blank=frozenset(range(0, 48, 2)) | {1, 5, 9, 13}),
        "yuv": CameraBag(encoding="yuv422"), "no_info": CameraBag(camera_info=False)}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("camera_inputs")
    made = {name: write_camera_bag(root / name, spec) for name, spec in BAGS.items()}
    made["camera"] = write_setup_file(root / "camera.yaml")
    return made


def _import(bag: Path, camera: Path | str, out: Path, *extra: str) -> int:
    return main(["import", "bag", str(bag), "--box-image", IMAGE_TOPIC, "--camera", str(camera),
                 "--pusher-pose", PUSHER_TOPIC, *OBJECT, "--out", str(out), *extra])


def _check_trial(out: Path) -> dict:
    """The one trial's box poses against the truth at the images' header stamps; its trial.json."""
    (trial,) = read_run(out)
    box = trial.platforms["real"].box_pose
    start = trial.meta["timing"]["start_ns"]
    stamps = start + np.round(box.t * 1e9).astype(np.int64)
    np.testing.assert_array_equal(stamps, image_stamps_ns())  # header stamps, not the log times 35 ms later
    position, quaternion = box_pose((stamps - T0_NS) / 1e9)
    assert np.max(np.linalg.norm(box.position - position, axis=1)) < 0.003
    assert np.max(np.abs(np.degrees(yaw_of(box.quaternion) - yaw_of(quaternion)))) < 1.0
    assert trial.meta["frame"] == "link_base" and trial.meta["object"]["name"] == "tagged_cube"
    return trial.meta


@pytest.mark.parametrize("bag", ["mono8", "jpeg"])
def test_camera_images_give_the_box_poses(inputs: dict[str, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str], bag: str) -> None:
    out = tmp_path / "run"
    assert _import(inputs[bag], inputs["camera"], out) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == f"wrote 1 trials to {out}"
    meta = _check_trial(out)
    section = meta["import"]
    assert section["series"] == {"box_pose": IMAGE_TOPIC, "pusher_pose": PUSHER_TOPIC}
    assert section["recording_frame"] == "link_base" and section["scene_checks"]["problems"] == []
    camera = section["camera"]
    assert camera["tally"] == {"images": 48, "poses": 48, "rate": 1.0, "refused": {}} and camera["low_rate"] is False
    assert camera["setup_file"] == str(inputs["camera"].resolve())
    assert camera["image_type"] == ("sensor_msgs/msg/CompressedImage" if bag == "jpeg" else "sensor_msgs/msg/Image")
    assert (f"import: trial {bag}: camera {IMAGE_TOPIC}: 48 of 48 images gave a pose (100.0 %); refused: none"
            in captured.err.splitlines())
    assert "WARNING" not in captured.err
    progress = [line for line in captured.err.splitlines() if line.startswith(f"detect {bag}:")]
    assert progress and "48/48" in progress[-1]


def test_a_trial_with_few_poses_is_imported_with_a_warning(inputs: dict[str, Path], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert _import(inputs["low"], inputs["camera"], out) == 0
    err = capsys.readouterr().err.splitlines()
    assert "import: trial low: camera /camera/color/image_raw: 20 of 48 images gave a pose (41.7 %); refused: " \
           "no_tag 28" in err
    assert sum(line.startswith("import: WARNING: trial low: only 41.7 % of its images gave a box pose (below 50 %)")
               for line in err) == 1
    (trial,) = read_run(out)
    camera = trial.meta["import"]["camera"]
    assert camera["low_rate"] is True and camera["tally"]["refused"] == {"no_tag": 28}
    assert len(trial.platforms["real"].box_pose) == 20


def test_every_bag_is_checked_before_any_image_is_read(inputs: dict[str, Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "bag", str(inputs["mono8"]), str(inputs["no_info"]), "--box-image", IMAGE_TOPIC,
                 "--camera", str(inputs["camera"]), *OBJECT, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "has no topic /camera/color/camera_info" in err and "detect" not in err  # no bag's images were read
    assert list(tmp_path.iterdir()) == []


def test_the_frame_options_with_a_camera(inputs: dict[str, Path], tmp_path: Path) -> None:
    """A keyless --frame names the arm base frame in the bag (here the pusher's frame 'link_base' is then another
    frame, given by --stream-transform); --box-transform corrects the camera's poses in the base frame."""
    out = tmp_path / "named"
    assert _import(inputs["mono8"], inputs["camera"], out, "--frame", "base", "--stream-transform",
                   f"{PUSHER_TOPIC}=0,0,0,1,0,0,0") == 0
    (named,) = read_run(out)
    assert named.meta["import"]["recording_frame"] == "base"
    out = tmp_path / "corrected"
    assert _import(inputs["mono8"], inputs["camera"], out, "--box-transform", "0.001,0,0,1,0,0,0") == 0
    (corrected,) = read_run(out)
    shift = corrected.platforms["real"].box_pose.position - named.platforms["real"].box_pose.position
    np.testing.assert_allclose(shift, np.tile([0.001, 0.0, 0.0], (48, 1)), atol=1e-12)


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("sim2real: error:")]
    assert len(lines) == 1 and err.strip().splitlines()[-1] == lines[0], err
    return lines[0]


def _bad_files(root: Path) -> dict[str, Path]:
    (root / "not_yaml.yaml").write_text("tag_detector: [unclosed\n")
    (root / "bad_size.yaml").write_text("tag_detector:\n  ros__parameters:\n    tags:\n      size: 5\n")
    (root / "no_section.yaml").write_text("other_node:\n  ros__parameters: {}\n")
    return {name: root / f"{name}.yaml" for name in ("not_yaml", "bad_size", "no_section")}


#: Case → (bag, camera file (a key of the inputs, of the bad files, or a path), extra options, the error's start).
BAD = {
    "both": ("mono8", "camera", ["--box-pose", "/box/pose"],
             "give the box's poses with --box-pose SOURCE or --box-image TOPIC (with --camera FILE), not both"),
    "unknown_encoding": ("yuv", "camera", [], f"--box-image: image topic {IMAGE_TOPIC}: image encoding 'yuv422' is "
                         "not read (only mono8, rgb8, bgr8; or a sensor_msgs/msg/CompressedImage topic)"),
    "no_camera_info": ("no_info", "camera", [], "--camera-info: bag {bag} has no topic /camera/color/camera_info (the "
                       "camera info, needed for the intrinsics); it has: "),
    "wrong_camera_info": ("mono8", "camera", ["--camera-info", "/camera/depth/camera_info"],
                          "--camera-info: bag {bag} has no topic /camera/depth/camera_info"),
    "missing_camera_file": ("mono8", "absent.yaml", [], "--camera: camera set-up file not found: {root}/absent.yaml"),
    "camera_file_not_yaml": ("mono8", "not_yaml", [], "--camera: {root}/not_yaml.yaml: malformed YAML at line 2"),
    "camera_file_bad_value": ("mono8", "bad_size", [],
                              "--camera: tags.size is the tag's black square in m (0.005-0.5), not 5.0"),
    "camera_file_no_section": ("mono8", "no_section", [],
                               "--camera: {root}/no_section.yaml: expected 'tag_detector: ros__parameters: ...'"),
    "transform": ("mono8", "camera", ["--transform", "0.1,0,0,1,0,0,0"],
                  f"--box-image {IMAGE_TOPIC}: the camera's box poses are in the arm base frame already"),
    "planar": ("mono8", "camera", ["--planar"], f"--box-image {IMAGE_TOPIC}: --planar is for a box source of "
               "positions only"),
    "pusher_on_the_image_topic": ("mono8", "camera", ["--pusher-pose", IMAGE_TOPIC],
                                  f"--box-image and --pusher-pose name the same source {IMAGE_TOPIC}"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_exit_2_and_nothing_written(inputs: dict[str, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str], case: str) -> None:
    bag_name, camera_name, extra, message = BAD[case]
    bad = _bad_files(tmp_path)
    camera = inputs.get(camera_name) or bad.get(camera_name) or tmp_path / camera_name
    before = sorted(p.name for p in tmp_path.iterdir())
    assert _import(inputs[bag_name], camera, tmp_path / "run", *extra) == 2
    line = _one_line_error(capsys)
    expected = message.format(bag=inputs[bag_name], root=tmp_path)
    assert line.startswith(f"sim2real: error: {expected}"), line
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no run, no staging directory


@pytest.mark.parametrize(("argv", "message"), [
    (["--pusher-pose", PUSHER_TOPIC], "give the box's poses with --box-pose SOURCE or --box-image TOPIC (with "
                                      "--camera FILE), one of the two"),
    (["--box-image", IMAGE_TOPIC, *OBJECT], "--box-image needs the camera set-up file: --camera FILE"),
    (["--box-pose", "/box/pose", "--camera", "camera.yaml"], "--camera belong to --box-image"),
    (["--box-pose", "/box/pose", "--camera-info", "/info"], "--camera-info belong to --box-image"),
    (["--box-image", IMAGE_TOPIC, "--camera", "CAMERA"], f"--box-image {IMAGE_TOPIC} places the box's tags by its "
                                                         "size: give the object"),
])
def test_the_box_source_options_are_checked_before_any_work(inputs: dict[str, Path], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str], argv: list[str],
                                                            message: str) -> None:
    argv = [str(inputs["camera"]) if a == "CAMERA" else a for a in argv]
    assert main(["import", "bag", str(inputs["mono8"]), *argv, "--out", str(tmp_path / "run")]) == 2
    assert _one_line_error(capsys).startswith(f"sim2real: error: {message}")
    assert list(tmp_path.iterdir()) == []


def test_help_documents_the_camera_source(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["import", "bag", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for phrase in ("--box-image TOPIC", "--camera FILE", "--camera-info TOPIC", "Box poses from camera images",
                   "stamped with the image's header stamp", "--transform is refused", "fewer than half"):
        assert phrase in text, phrase
