"""``sim2real handeye``: the camera's pose in the arm base frame from a bag of a tag the arm holds still at several
poses, written as the camera set-up file (``base_from_camera``).

A top-level command rather than ``calibrate handeye``: ``calibrate`` takes its trials as a positional list
(``calibrate TRIAL... --out FILE``), and argparse cannot put a subcommand beside a positional list (the word
``handeye`` would be read as a trial, or every existing ``calibrate`` call would need a subcommand).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim2real.cli.common import bounded_float, bounded_int
from sim2real.vision.names import CORNER_REFINEMENTS

if TYPE_CHECKING:
    from sim2real.trials.handeye_recording import HandEyeRecording, HandEyeSelection
    from sim2real.vision.handeye import HandEyeResult
    from sim2real.vision.setup import CameraSetup

#: Defaults of the still rule as --help states them (those of sim2real.trials.handeye_recording.StillRule, not
#: imported here to keep --help fast).
STILL_SPEED, STILL_WINDOW = 0.01, 0.2
#: A pose stands out when its reprojection is above this many times the median and above the floor (px): corner
#: noise alone spreads clean poses over about 3× their median below a few tenths of a pixel.
STANDS_OUT, STANDS_OUT_PX = 3.0, 0.5
#: The calibration is weak when its standard deviation (the root sum of squares over the axes) is above these.
WEAK_MM, WEAK_DEG = 2.0, 0.3
#: The fitted tag pose disagrees with --tag-on-flange beyond these.
GUESS_MM, GUESS_DEG = 20.0, 10.0
#: A still pose's status (sim2real.trials.handeye_recording) in the printed table.
STATUS_WORDS = {"unambiguous": "used", "ambiguous": "used (ambiguous)", "no_tag": "tag not seen",
                "duplicate": "tag seen twice", "reprojection": "tag pose > 2 px", "undecodable": "undecodable"}

EPILOG = """\
The recording: a rosbag2 directory, .mcap / .db3 file or ROS 1 .bag with images of the camera
(--image: sensor_msgs/Image in mono8, rgb8 or bgr8, or CompressedImage), its CameraInfo (--camera-info:
the first message gives the intrinsics and distortion) and the arm's JointState (--joint-states:
joint1..joint6, rad), while the arm holds a plate with one AprilTag (--tag-id, --tag-size: its black
square in m) at several poses in front of the fixed camera, stopping at each. Header stamps time
everything.

Still poses: an image counts when every joint was slower than --still-speed (default 0.01 rad/s; the
change of the joint angles over 50 ms) for --still-window (default 0.2 s) either side of its stamp,
the joint states covering that window without a gap over 0.1 s; the joint states' velocity field is
not read. Images while the arm moves (blurred, and timed against the joints only as well as the two
clocks agree) are never used. Consecutive still images are one pose; of each, the image nearest its
middle in which the tag is decoded once (up to 5 tried) is used, with the flange pose of the joint
angles interpolated at its stamp (forward kinematics of urdf/xarm6.urdf). At least 4 still poses
must show the tag unambiguously (a square tag seen head-on from afar has two poses): tilt it 20-50°
to the camera, and turn the flange about different axes between poses; 8-12 poses make a good
calibration. Fewer: one line, exit 2, nothing written.

The fit: OpenCV's hand-eye solution (Tsai) seeds a least-squares fit of base_from_camera and the tag's
pose on the flange to every tag corner's pixel (sim2real.vision.handeye); --tag-on-flange seeds it too
(the better fit is kept, and a result far from the guess is said). Printed: the poses used, the
camera's position (m) and orientation (w, x, y, z) with standard deviations (mm; deg about the base
axes), the tag on the flange, and per pose its reprojection (px, RMS over the corners) and how far
the tag seen lies from the tag the arm holds (mm, deg: a single image's depth is uncertain by mm, so
these vary more than the pixels). A WARNING when a pose's reprojection stands out (above 3× the
median and 0.5 px: the tag slipped, a joint was not still, a wrong detection) or the standard
deviation is above 2 mm or 0.3°.

Output: --out, the camera set-up file (a ROS 2 params file with a tag_detector section, as
'sim2real import bag --camera' and 'sim2real run --camera' read it) with base_from_camera calibrated,
image_topic and camera_info_topic set to this bag's, and every other setting (the box's tags, corner
refinement) from --camera FILE (default: the defaults; comments and other sections of FILE are not
kept). Written atomically; an existing --out is replaced only with --force, and only a camera set-up
file or a file sim2real wrote.

Example:
  sim2real handeye rec/handeye_2025-03-11 --image /camera/color/image_raw \\
      --joint-states /xarm/joint_states --tag-id 7 --tag-size 0.06 \\
      --camera config/camera.yaml --out config/camera_calibrated.yaml
"""


def _topic(text: str) -> str:
    topic = text.strip()
    if not topic:
        raise argparse.ArgumentTypeError("expected a topic name")
    return topic if topic.startswith("/") else f"/{topic}"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``handeye`` subcommand."""
    parser = subparsers.add_parser(
        "handeye", help="the camera's pose in the arm base frame from a bag of a tag the arm holds (hand-eye)",
        description="Hand-eye calibration of a fixed camera: from a bag of images of an AprilTag the arm holds "
                    "still at several poses, with the joint states, estimate the camera's pose in the arm base "
                    "frame (and the tag's on the flange) with standard deviations; write the camera set-up file.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bag", metavar="BAG", help="rosbag2 directory, .mcap / .db3 file or ROS 1 .bag")
    parser.add_argument("--image", required=True, type=_topic, metavar="TOPIC",
                        help="the camera's sensor_msgs/Image (mono8, rgb8, bgr8) or CompressedImage")
    parser.add_argument("--camera-info", type=_topic, metavar="TOPIC",
                        help="its sensor_msgs/CameraInfo (default: the --camera file's camera_info_topic when that "
                             "file's image_topic is --image, else camera_info beside the image topic: "
                             "/cam/color/image_raw[/compressed] -> /cam/color/camera_info)")
    parser.add_argument("--joint-states", "--joints", dest="joint_states", required=True, type=_topic,
                        metavar="TOPIC", help="the arm's sensor_msgs/JointState (joint1..joint6, rad)")
    parser.add_argument("--tag-id", required=True, type=bounded_int(0, 65535), metavar="N",
                        help="the id of the tag on the plate the arm holds")
    parser.add_argument("--tag-size", required=True, type=bounded_float(0.005, 0.5), metavar="M",
                        help="the side of its black square, m (0.005-0.5)")
    parser.add_argument("--tag-family", metavar="FAMILY",
                        help="its family: 36h11, 36h10, 25h9, 16h5 (default: the --camera file's family, 36h11)")
    parser.add_argument("--refine", default=CORNER_REFINEMENTS[0], choices=CORNER_REFINEMENTS,
                        help="the detector's corner refinement for the calibration (default edges: lines fitted to "
                             "the square's edges; the written file keeps its own 'refine')")
    parser.add_argument("--tag-on-flange", metavar="x,y,z,qw,qx,qy,qz",
                        help="a guess of the tag's pose in the flange frame (m, unit quaternion, w first): a second "
                             "start of the fit (default: none; OpenCV's closed form alone)")
    parser.add_argument("--camera", metavar="FILE",
                        help="an existing camera set-up file whose other settings the output keeps (default: the "
                             "defaults)")
    parser.add_argument("--still-speed", type=bounded_float(1e-5, 1.0), default=STILL_SPEED, metavar="RAD_S",
                        help=f"fastest joint speed of a still arm, rad/s (default {STILL_SPEED:g})")
    parser.add_argument("--still-window", type=bounded_float(0.05, 5.0), default=STILL_WINDOW, metavar="S",
                        help=f"how long either side of an image the arm must be still, s (default {STILL_WINDOW:g})")
    parser.add_argument("--out", required=True, metavar="FILE", help="camera set-up file to write (.yaml or .yml)")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing --out, if it is a camera set-up file or sim2real wrote it")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    parser.set_defaults(handler=run)


def _log(line: str) -> None:
    print(f"handeye: {line}", file=sys.stderr, flush=True)


def _is_replaceable(path: Path) -> bool:
    """Whether ``--force`` may replace ``path``: a camera set-up file, or a file with sim2real's header line."""
    from sim2real.cli.common import is_sim2real_params_file
    from sim2real.errors import Sim2RealError
    from sim2real.vision.setup import load_camera_setup

    if is_sim2real_params_file(path):
        return True
    try:
        load_camera_setup(path)
    except Sim2RealError:
        return False
    return True


def _info_topic(args: argparse.Namespace, setup: CameraSetup, given: bool) -> str:
    """``--camera-info``, or its default (see its help)."""
    if args.camera_info is not None:
        return str(args.camera_info)
    if given and setup.image_topic == args.image:
        return setup.camera_info_topic
    image = str(args.image).removesuffix("/compressed")
    namespace = image.rsplit("/", 1)[0]
    return f"{namespace}/camera_info"


def _selection(args: argparse.Namespace) -> tuple[HandEyeSelection, CameraSetup, Any]:
    """The selection, the set-up the output starts from, and the guess (4, 4) or None; checked before any work."""
    from sim2real.errors import InputError, Sim2RealError
    from sim2real.spatial.rigid import from_pose
    from sim2real.trials.handeye_recording import HandEyeSelection, StillRule
    from sim2real.trials.rigid import parse_transform
    from sim2real.vision.setup import CameraSetup, load_camera_setup
    from sim2real.vision.tags import FAMILIES

    setup = CameraSetup()
    if args.camera is not None:
        try:
            setup = load_camera_setup(args.camera)
        except Sim2RealError as err:
            text = str(err)
            raise type(err)(f"--camera: {text if str(args.camera) in text else f'{args.camera}: {text}'}") from None
    family = args.tag_family or setup.family
    if family not in FAMILIES:
        raise InputError(f"--tag-family {family!r} is not a tag family (one of {', '.join(FAMILIES)})")
    guess = None
    if args.tag_on_flange is not None:
        transform = parse_transform(args.tag_on_flange, "the tag's pose on the flange", "tag_on_flange")
        if float(math.hypot(*transform.translation)) > 1.0:
            raise InputError(f"--tag-on-flange '{args.tag_on_flange}': a tag {math.hypot(*transform.translation):.3g} "
                             f"m from the flange; it is held on the flange (within 1 m; the values are in m)")
        guess = from_pose(transform.translation, transform.quaternion)
    rule = StillRule(max_speed=args.still_speed, half_window=args.still_window)
    selection = HandEyeSelection(args.image, _info_topic(args, setup, args.camera is not None), args.joint_states,
                                 args.tag_id, args.tag_size, family, args.refine, rule)
    return selection, setup, guess


def run(args: argparse.Namespace) -> int:
    """Handler of ``sim2real handeye``."""
    from dataclasses import replace

    from sim2real.cli.common import check_output_file, check_yaml_name, removed_on_interrupt
    from sim2real.filemodes import write_text_atomic
    from sim2real.trials.handeye_recording import calibrate_recording, read_handeye_bag
    from sim2real.vision.setup import dump_camera_setup

    out = check_output_file(check_yaml_name(args.out, "--out"), args.force, _is_replaceable)
    selection, setup, guess = _selection(args)
    recording = read_handeye_bag(args.bag, selection)
    result = calibrate_recording(recording, selection, guess)  # errors first: one line, nothing else said
    _log(f"{args.bag}: {recording.image_count} images on {selection.image_topic} ({recording.camera.width} × "
         f"{recording.camera.height} px; intrinsics from {selection.camera_info_topic}), {recording.joint_count} "
         f"joint states on {selection.joint_states}; {recording.still_count} images taken while the arm was still, "
         f"in {len(recording.poses)} still pose(s)")
    document = result_document(recording, selection, result, guess)
    calibrated = replace(setup, image_topic=selection.image_topic, camera_info_topic=selection.camera_info_topic,
                         base_from_camera=result.base_from_camera)
    header = (f"# sim2real camera set-up: base_from_camera by 'sim2real handeye' from {Path(args.bag).name} "
              f"({len(recording.used)} still poses; σ {document['camera']['std_mm']:.2f} mm, "
              f"{document['camera']['std_deg']:.3f}°)\n")
    with removed_on_interrupt(out):
        write_text_atomic(out, header + dump_camera_setup(calibrated))
    document["out"] = str(out)
    if args.json:
        print(json.dumps(document))
    else:
        print("\n".join(report_lines(document)))
    for warning in document["warnings"]:
        _log(f"WARNING: {warning}")
    _log(f"wrote {out}")
    return 0


def _rss(values: Any) -> float:
    return float(math.sqrt(sum(float(v) ** 2 for v in values)))


def _warnings(document: dict[str, Any], result: HandEyeResult, guess: Any) -> list[str]:
    """What looks wrong: poses that stand out, a weak calibration, a guess far from the fit."""
    import numpy as np

    from sim2real.spatial.rigid import rotation_angle

    warnings = []
    median = float(np.median(result.reprojection_px))
    for pose in document["poses"]:
        if pose.get("stands_out"):
            warnings.append(f"pose {pose['pose']} (at {pose['time_s']:.2f} s) stands out: reprojection "
                            f"{pose['reprojection_px']:.2f} px, {pose['reprojection_px'] / median:.1f}× the median "
                            f"{median:.2f} px; the tag may have slipped on the flange, the arm not been still or the "
                            f"detection be wrong: check it and record again without that pose")
    camera = document["camera"]
    if camera["std_mm"] > WEAK_MM or camera["std_deg"] > WEAK_DEG:
        warnings.append(f"the calibration is weak: standard deviation {camera['std_mm']:.2f} mm, "
                        f"{camera['std_deg']:.3f}° (above {WEAK_MM:g} mm or {WEAK_DEG:g}°): record more poses, "
                        f"turned about different axes, with the tag nearer the camera")
    if guess is not None:
        moved = 1e3 * float(np.linalg.norm(result.tag_pose[:3, 3] - guess[:3, 3]))
        turned = math.degrees(rotation_angle(result.tag_pose, guess))
        if moved > GUESS_MM or turned > GUESS_DEG:
            warnings.append(f"the tag's fitted pose on the flange is {moved:.0f} mm and {turned:.0f}° from "
                            f"--tag-on-flange: check the guess, --tag-size and --tag-id")
    return warnings


def result_document(recording: HandEyeRecording, selection: HandEyeSelection, result: HandEyeResult,
                    guess: Any = None) -> dict[str, Any]:
    """The result as ``--json`` prints it (lengths in m or mm, angles in deg as the keys say; frames: the camera's
    optical frame and the tag's in the arm base frame ``link_base`` and the flange frame)."""
    import numpy as np

    from sim2real.spatial.rigid import to_pose

    position, quaternion = to_pose(result.base_from_camera)
    tag_position, tag_quaternion = to_pose(result.tag_pose)
    median = float(np.median(result.reprojection_px))
    rows, used = [], 0
    for n, pose in enumerate(recording.poses, start=1):
        row: dict[str, Any] = {"pose": n, "time_s": round((pose.stamp_ns - recording.t0_ns) / 1e9, 6),
                               "stamp_ns": pose.stamp_ns, "still_images": pose.images, "status": pose.status,
                               "used": pose.used, "joints_rad": [round(float(v), 6) for v in pose.joints]}
        if pose.used:
            px = float(result.reprojection_px[used])
            row.update(reprojection_px=round(px, 4), error_mm=round(1e3 * float(result.pose_error_m[used]), 4),
                       error_deg=round(math.degrees(float(result.pose_error_rad[used])), 4),
                       stands_out=bool(px > STANDS_OUT * median and px > STANDS_OUT_PX))
            used += 1
        rows.append(row)
    std_mm, std_deg = 1e3 * result.std_translation, np.degrees(result.std_rotation)
    document: dict[str, Any] = {
        "format": "sim2real.handeye/1", "bag": recording.path, "image_topic": selection.image_topic,
        "camera_info_topic": selection.camera_info_topic, "joint_states": selection.joint_states,
        "tag": {"id": selection.tag_id, "family": selection.family, "size_m": selection.tag_size},
        "still_rule": {"max_speed_rad_s": selection.rule.max_speed, "half_window_s": selection.rule.half_window},
        "images": recording.image_count, "still_images": recording.still_count, "still_poses": len(recording.poses),
        "poses_used": used, "unambiguous": recording.unambiguous,
        "camera": {"frame": "link_base", "translation_m": [round(float(v), 6) for v in position],
                   "rotation_wxyz": [round(float(v), 8) for v in quaternion],
                   "std_translation_mm": [round(float(v), 4) for v in std_mm],
                   "std_rotation_deg": [round(float(v), 5) for v in std_deg],
                   "std_mm": round(_rss(std_mm), 4), "std_deg": round(_rss(std_deg), 5)},
        "tag_on_flange": {"translation_m": [round(float(v), 6) for v in tag_position],
                          "rotation_wxyz": [round(float(v), 8) for v in tag_quaternion]},
        "poses": rows}
    document["warnings"] = _warnings(document, result, guess)
    return document


def report_lines(document: dict[str, Any]) -> list[str]:
    """The result in words (what is printed without ``--json``)."""
    camera, tag, flange = document["camera"], document["tag"], document["tag_on_flange"]
    numbers = " ".join(f"{v:.5f}" for v in camera["translation_m"])
    lines = [f"Camera in the arm base frame (base_from_camera) from {document['poses_used']} of "
             f"{document['still_poses']} still poses ({document['unambiguous']} unambiguous; tag {tag['id']}, "
             f"{tag['family']}, {1e3 * tag['size_m']:g} mm):",
             f"  position     x y z     {numbers} m   ± {' '.join(f'{v:.2f}' for v in camera['std_translation_mm'])} "
             f"mm (σ {camera['std_mm']:.2f} mm)",
             f"  orientation  w x y z   {' '.join(f'{v:.6f}' for v in camera['rotation_wxyz'])}   ± "
             f"{' '.join(f'{v:.3f}' for v in camera['std_rotation_deg'])}° about the base x, y, z "
             f"(σ {camera['std_deg']:.3f}°)",
             f"Tag on the flange (flange_from_tag): x y z {' '.join(f'{v:.5f}' for v in flange['translation_m'])} m, "
             f"w x y z {' '.join(f'{v:.6f}' for v in flange['rotation_wxyz'])}",
             "Per still pose (time since the recording's start; residuals of the tag seen against the tag held):",
             "  pose   time s  still images  image              px      mm     deg"]
    for row in document["poses"]:
        head = f"  {row['pose']:4d} {row['time_s']:8.2f} {row['still_images']:13d}  "
        status = STATUS_WORDS.get(row["status"], row["status"])
        if row["used"]:
            mark = "  <- stands out" if row["stands_out"] else ""
            lines.append(f"{head}{status:<16s} {row['reprojection_px']:6.2f} {row['error_mm']:7.2f} "
                         f"{row['error_deg']:7.3f}{mark}")
        else:
            lines.append(f"{head}{status}: not used")
    return lines
