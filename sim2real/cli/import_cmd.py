"""``sim2real import``: turn external recordings (cube tosses, ROS 1/2 bags, CSV) into trial directories."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from sim2real.errors import Sim2RealError

if TYPE_CHECKING:
    from sim2real.trials.bag_import import BagSelection
    from sim2real.trials.camera_source import CameraSelection
    from sim2real.trials.frames_file import FramesOptions
    from sim2real.trials.recording import ImportSettings, Recording
    from sim2real.trials.trial_object import TrialObject


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``import`` subcommand and its sources (``cube-toss``)."""
    parser = subparsers.add_parser(
        "import",
        help="import external recordings as trials (cube-toss, bag, csv)",
        description="Convert external recordings into a run directory of trials (one rosbag2 per trial) "
        "that 'sim2real fit' and 'sim2real report' read.",
    )
    sources = parser.add_subparsers(dest="source", metavar="SOURCE")
    cube = sources.add_parser(
        "cube-toss",
        help="the real ContactNets cube tosses (NPZ) → one trial per toss",
        description="Write one trial per toss: /real/box_pose (geometry_msgs/PoseStamped, surface frame, m) at "
        "the recorded 148 Hz sample times, and trial.json with the cube's measured side and mass under "
        "'object' and the data source and licence under 'source'. A toss whose cube starts inside the surface "
        "(its lowest corner more than --scene-tolerance below z = 0) refuses the import, unless --force "
        "imports it flagged (see 'sim2real import bag --help', scene checks). Nothing is written on error.",
    )
    cube.add_argument("npz", metavar="NPZ", nargs="?", default=None,
                      help="the tosses' NPZ file (default: the 570 real ContactNets tosses shipped with sim2real, "
                           "sim2real/data/cube_toss/README.md gives the format)")
    cube.add_argument("--out", required=True, metavar="DIR", help="run directory to create (must not exist)")
    cube.add_argument("--tosses", metavar="SPEC",
                      help="tosses to import, e.g. '0-19,100' (inclusive ranges, each toss once; default: all)")
    _add_scene_options(cube)
    cube.set_defaults(handler=run_cube_toss)
    _register_bag(sources)
    _register_csv(sources)
    parser.set_defaults(handler=_missing_source(parser))


BAG_EPILOG = """\
Frames and units: every written pose is in the experiment frame, the arm base frame link_base
(x forward, z up, table top at z = 0), in m, orientations as unit quaternions. Poses are read in the
recording frame (--frame FRAME, default the frame of the first box pose) and mapped by --transform.

Pose sources (--box-pose, --pusher-pose):
  TOPIC             geometry_msgs/PoseStamped, TransformStamped, PoseWithCovarianceStamped or
                    nav_msgs/Odometry; the pose is in the message's header.frame_id
  tf:FRAME          the /tf transforms whose child_frame_id is FRAME, in their parent frame
  TOPIC:X,Y,Z[,QW,QX,QY,QZ]
                    any message type (custom ones too, from the bag's own definitions): dotted field
                    paths of the position and optionally of a quaternion, scalar first; e.g. a robot's
                    Cartesian log in mm without a header: --pusher-pose /arm/log:x,y,z,q0,qx,qy,qz
                    --units /arm/log=mm --frame /arm/log=base_link --stamp-field /arm/log=clock
or, for the box, camera images of its AprilTags (--box-image, below).
A box pose source without a quaternion (TOPIC:X,Y,Z) cannot show a tilt or a flip, and is refused unless
--planar says the box cannot tilt: the trials are then planar recordings, as a planar CSV's (see
'sim2real import csv --help'): the box rests on the table, its centre at box.size_z / 2 (--box-size is
needed), --transform and --box-offset must be level, and trial.json "import.planar" and the real
outcome record the tilt, the flip and the heading (yaw_deg) as unknown (null), never as 0. The poses
written carry one constant orientation (none was recorded), so fit such trials with
--weights orientation=0. A bag given twice (also as a directory and its metadata.yaml) is refused.
A pose in a frame other than the recording frame is composed with the static transforms linking
the two: those on /tf_static, and /tf transforms that never change (ROS 1's static publishers put
them on /tf); dynamic /tf chains are not composed (an error names the frame).

Per-stream options, keyed by the source's topic (or tf:FRAME), each repeatable:
  --frame TOPIC=FRAME          the frame the stream's poses are in (an empty or missing frame_id)
  --units [TOPIC=]m|cm|mm      unit of its positions (without TOPIC: every field source)
  --stamp-field TOPIC=FIELD    a clock field (s) times the samples: its spacing, placed on the bag's
                               receive clock by the median offset (messages without a header are
                               otherwise timed by their receive times, and trial.json says so)
  --stream-transform TOPIC=x,y,z,qw,qx,qy,qz
                               the stream's frame in the recording frame (replaces the frame lookup)
The box pose is the tracked body: --box-offset moves its origin to the box geometric centre, and
the tracked body's axes are taken as the box axes (x along box.size_x, ...) unless the offset has a
rotation. The pusher's tracked origin is the pusher point (sphere centre, or the tip of a rod);
--tool-offset moves it from a tracked flange to the tip, in the flange's frame.

Box poses from camera images (--box-image TOPIC --camera FILE [--camera-info TOPIC], instead of
--box-pose): TOPIC carries sensor_msgs/Image (mono8, rgb8 or bgr8; other encodings are refused) or
sensor_msgs/CompressedImage (decoded by OpenCV). The intrinsics are the first CameraInfo message on
--camera-info (default: the camera file's camera_info_topic; a bag without it is refused before any
image is read); the tags (family, size, faces), the corner refinement and base_from_camera come from
the camera set-up file FILE (a params file with a tag_detector section), the tags' places on the box
from --box-size (the object is needed). Each image gives one box pose, the box geometric centre in
the arm base frame, stamped with the image's header stamp; an image whose tags give none (no tag,
an ambiguous single tag, a poor reprojection, undecodable bytes) is dropped and counted, never
guessed. The arm base frame is then the recording frame: --transform is refused (bring the pusher
into that frame by its frame_id and /tf_static, --frame TOPIC=FRAME or --stream-transform), a
keyless --frame FRAME names the arm base frame as the bag's other streams call it (default
link_base), and --planar is refused (the tags give the tilt). --box-offset, --box-transform,
--box-delay and --frames apply as to any box stream: corrections as 'sim2real calibrate' estimates
them (the tags already give the box centre: leave --box-offset out unless calibrate found one).
A progress bar per bag on stderr shows the images read and detected. The console prints a line
per trial with its images, poses, detection rate and refusals, and a warning when fewer than half
of its images gave a pose (the trial is still imported); trial.json
"import.camera" keeps the tally of the images in the trial's window (tally, low_rate), the camera
file, topics, intrinsics, tags and base_from_camera.

What replays a trial (stored in trial.json "object", editable later): --box-size, --box-mass or
--box-density, --pusher-shape, --pusher-radius (and --pusher-length of a rod), --object NAME. A
trial without them is imported, but replay and fit refuse it (naming the trial) rather than
simulate a default box.

Time: --clock header (default) times samples by their header stamps (acquisition), --clock receive
by the bag's receive (log) times. Each trial's time axis starts at its first sample.

Splitting one long bag (--split): none (one trial per bag); gaps:SECONDS (a new trial after each gap
longer than SECONDS in the box pose stream); windows:FILE (a CSV of start,end per line, s since the
bag's first selected sample on the chosen clock; an optional header line). Trials are named
<bag name> or <bag name>_NN. Segments with fewer than 3 box poses are skipped (and said so).

Outliers, per trial and stream: a single sample whose orientation differs from both neighbours by
more than --outlier-angle while they agree (q and -q are the same orientation: a sign change is
not an outlier), or whose position lies more than --outlier-jump from both neighbours while they
agree, is dropped; so are samples with NaN values or a repeated time stamp. The counts are printed
per trial and kept in trial.json "import.outliers".

Scene checks (every trial, against its object, before anything is written; a trial without the
object options cannot be checked). The box's start (the mean of its poses while it rests before the
push, else its first pose) may not put its lowest corner more than --scene-tolerance below the table
top (z = 0), nor, for a push (a trial with a pusher pose or joint states), more than that above it;
the pusher (a sphere of --pusher-radius about its point, or a rod: a capsule of that radius from its
tip up --pusher-length) may not start inside the box by more than the tolerance (the median over its
first 5 samples, against the box as an oriented box at each instant), and must come within the
tolerance + 3 mm of the box surface at some sample over the trial (touching it, give or take the
calibration of markers and offsets and a tap between two samples; frames wrong by centimetres stay
far outside). Box-only trials (a toss) get the first check alone; a planar box rests on the table by
construction and gets the pusher checks. A failing trial refuses the import in one line (the trial,
the check, its numbers in mm; with several, how many and each briefly), exit 2, nothing written.
--force imports such trials anyway: a warning per trial, and the problems with their numbers in its
trial.json "import.scene_checks.problems", which 'sim2real report' and 'replay' show.

Output: OUT/<trial>/ (a rosbag2 with /real/box_pose, /real/pusher_pose, /real/joint_states and
trial.json with an "import" section: source, clock, transforms, offsets, window, outliers, static
transforms taken from /tf, stream timing, scene checks) and OUT/run.json. OUT must not exist or be
empty; nothing is written on error.
"""

CSV_EPILOG = """\
Columns (header row required, any order, extra columns ignored; '#' lines skipped):
  t                              sample time, s (not negative; rows in time order, never backwards)
and the box pose, 3-D or planar (one of the two per file):
  box_x, box_y, box_z            3-D: tracked box body origin in the recording frame, m
  box_qw, box_qx, box_qy, box_qz its orientation, unit quaternion w, x, y, z (body -> recording frame)
  box_x, box_y, box_yaw          planar: its origin in the table plane (the recording frame's x-y
                                 plane), m, and its heading about z, rad
  pusher_x, pusher_y, pusher_z   optional: pusher point (sphere centre, rod tip) in the recording frame, m
                                 (beside a planar box pose pusher_z may be left out)
A planar recording has no height and no tilt: the box rests on the table with its centre at half
its thickness (box.size_z / 2 of --box-size, which it needs), oriented by the yaw alone, and a
pusher without pusher_z is put at that height too; --transform and --box-offset must then be level
(rotations about z). Its trials mark the tilt and flip as unknown (trial.json "import.planar",
outcome "planar": true, "flipped": null). A file with box_yaw and box_z or quaternion columns is
refused. A row may leave the box or the pusher cells empty (not tracked then). --transform,
--box-offset, the object options (--box-size, ...), --split, the outlier options and the scene
checks (--scene-tolerance, --force) work as for 'sim2real import bag' (see its --help).
"""


#: Defaults of the outlier thresholds as --help states them (equal to DEFAULT_OUTLIER_ANGLE_DEG and
#: DEFAULT_OUTLIER_JUMP_M of sim2real.trials.recording, not imported here to keep --help fast).
OUTLIER_ANGLE_DEG = 30.0
OUTLIER_JUMP_M = 0.03
#: Default of --scene-tolerance, mm (DEFAULT_SCENE_TOLERANCE_M of sim2real.trials.scene_checks, in mm).
SCENE_TOLERANCE_MM = 2.0


def _tolerance_mm(text: str) -> float:
    """argparse type of ``--scene-tolerance``: a positive, finite length in mm."""
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive, finite length in mm, got {text!r}")
    return value


def _delay_s(text: str) -> float:
    """A box stream delay in s: finite, within :data:`~sim2real.trials.frames_file.MAX_DELAY_S`."""
    from sim2real.cli.common import bounded_float
    from sim2real.trials.frames_file import MAX_DELAY_S

    return bounded_float(-MAX_DELAY_S, MAX_DELAY_S)(text)


def _frames(args: argparse.Namespace) -> FramesOptions:
    """``--box-transform``, ``--box-offset``, the box delay, ``--tool-offset`` and the frame uncertainty: the
    options' (no uncertainty), or the ``--frames`` file's (not both; a ``--tool-offset`` beside a file that
    sets one must be the same)."""
    import dataclasses

    from sim2real.errors import Sim2RealError
    from sim2real.trials.frames_file import FramesOptions, read_frames_file
    from sim2real.trials.rigid import parse_offset

    if args.frames is None:
        return FramesOptions(args.box_transform, args.box_offset, args.box_delay or 0.0, args.tool_offset, None)
    given = [option for option, value in (("--box-transform", args.box_transform), ("--box-offset", args.box_offset),
                                          ("--box-delay", args.box_delay)) if value is not None]
    if given:
        raise Sim2RealError(f"--frames sets {', '.join(given)} already: give one or the other")
    options = read_frames_file(args.frames)
    if options.tool_offset is None:
        return dataclasses.replace(options, tool_offset=args.tool_offset)
    if args.tool_offset is None:
        return options
    mine = parse_offset(args.tool_offset, "the tool offset", "tool_offset")
    if not mine.close_to(parse_offset(options.tool_offset, f"--frames {args.frames} tool_offset", None)):
        raise Sim2RealError(f"--frames {args.frames} sets the tool offset to {options.tool_offset} (as calibrated); "
                            f"--tool-offset {args.tool_offset} is another: give one or the other")
    return options


def _add_scene_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scene-tolerance", type=_tolerance_mm, default=SCENE_TOLERANCE_MM, metavar="MM",
                        help="how far, mm, a box start may lie in or above the table and a pusher start inside the "
                             f"box before the scene is refused as not physical (default {SCENE_TOLERANCE_MM:g})")
    parser.add_argument("--force", action="store_true",
                        help="import trials that fail the scene checks anyway, flagged in their trial.json "
                             "(import.scene_checks) with a warning")


def _add_common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, metavar="DIR", help="run directory to create (absent or empty)")
    parser.add_argument("--transform", metavar="x,y,z,qw,qx,qy,qz",
                        help="the recording frame in the arm base frame (T_base_recording): p_base = R(q) p + "
                             "(x, y, z); m (each within 100 m) and a unit quaternion, w first (default: identity)")
    parser.add_argument("--tool-offset", metavar="x,y,z[,qw,qx,qy,qz]",
                        help="the pusher point in the tracked pusher body's frame, m, each within 10 m (e.g. a "
                             "probe tip 0,0,0.17 beyond a logged flange; needs the pusher's orientation) "
                             "(default: 0,0,0)")
    parser.add_argument("--box-offset", metavar="x,y,z[,qw,qx,qy,qz]",
                        help="the box geometric centre in the tracked box body's frame, m, each within 10 m (e.g. "
                             "a mocap origin on the lid: 0,0,-0.105); optionally the box axes' rotation "
                             "(default: 0,0,0)")
    parser.add_argument("--box-transform", metavar="x,y,z,qw,qx,qy,qz",
                        help="a correction of the box stream alone in the arm base frame, after --transform "
                             "(T_base_corrected; 'sim2real calibrate' estimates it; default: identity)")
    parser.add_argument("--box-delay", type=_delay_s, default=None, metavar="SECONDS",
                        help="the box stream's delay: a box pose stamped s was the box at s - SECONDS (default 0; "
                             "'sim2real calibrate' estimates it)")
    parser.add_argument("--frames", metavar="FILE",
                        help="a frames file of 'sim2real calibrate': its --box-transform, --box-offset, "
                             "--box-delay (not with those options) and --tool-offset (a --tool-offset given too "
                             "must be the same); --transform stays as you give it")
    parser.add_argument("--split", default="none", metavar="none|gaps:SECONDS|windows:FILE",
                        help="cut each recording into trials (default: none, one trial per recording)")
    parser.add_argument("--outlier-angle", type=float, default=OUTLIER_ANGLE_DEG, metavar="DEG",
                        help=f"orientation-flip threshold, degrees; 0 disables (default {OUTLIER_ANGLE_DEG:g})")
    parser.add_argument("--outlier-jump", type=float, default=OUTLIER_JUMP_M, metavar="M",
                        help=f"position-jump threshold, m; 0 disables (default {OUTLIER_JUMP_M:g})")
    thing = parser.add_argument_group("the object and pusher (stored in each trial; replay and fit need them)")
    thing.add_argument("--box-size", metavar="X,Y,Z", help="box edges along its body x, y, z, m")
    thing.add_argument("--box-mass", type=float, metavar="KG", help="box mass, kg")
    thing.add_argument("--box-density", type=float, metavar="KG/M3",
                       help="or its density, kg/m^3 (mass = density x volume)")
    thing.add_argument("--pusher-shape", choices=("sphere", "rod"), help="a sphere, or a vertical rod (a point probe)")
    thing.add_argument("--pusher-radius", type=float, metavar="M", help="pusher sphere or rod radius, m")
    thing.add_argument("--pusher-length", type=float, metavar="M", help="rod length above its tip, m (rod only)")
    thing.add_argument("--object", metavar="NAME",
                       help="object label (e.g. steel, not empty): per-object fits group by it")
    _add_scene_options(parser)


def _register_bag(sources: argparse._SubParsersAction) -> None:
    bag = sources.add_parser(
        "bag",
        help="any lab's ROS 1 / ROS 2 bags (topics or /tf frames) → trials",
        description="Convert ROS 1 (.bag) and ROS 2 (rosbag2 directory, mcap or sqlite3) recordings of a box "
                    "and a pusher (and optionally the arm's joint states) into trials that 'sim2real replay', "
                    "'fit' and 'report' read.",
        epilog=BAG_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    bag.add_argument("bags", nargs="+", metavar="BAG",
                     help="rosbag2 directory, .mcap or .db3 file, or ROS 1 .bag file (one or more, each once)")
    bag.add_argument("--box-pose", metavar="SOURCE", help="the tracked box body: TOPIC, tf:FRAME or "
                     "TOPIC:X,Y,Z[,QW,QX,QY,QZ] (see below; without the quaternion only with --planar); or "
                     "--box-image")
    bag.add_argument("--pusher-pose", metavar="SOURCE", help="the tracked pusher point (sphere centre or rod tip)")
    bag.add_argument("--joint-states", metavar="TOPIC",
                     help="sensor_msgs/JointState of the xArm (joints joint1..joint6; rad, rad/s, N m)")
    bag.add_argument("--frame", action="append", default=[], metavar="[TOPIC=]FRAME",
                     help="FRAME: the recording frame that --transform maps (default: frame of the first box pose); "
                          "TOPIC=FRAME: the frame of that stream's poses (repeatable)")
    bag.add_argument("--units", action="append", default=[], metavar="[TOPIC=]UNIT",
                     help="m, cm or mm: unit of a stream's positions (without TOPIC: every field source)")
    bag.add_argument("--stamp-field", action="append", default=[], metavar="TOPIC=FIELD",
                     help="a clock field (s) that times a stream's samples (see below)")
    bag.add_argument("--stream-transform", action="append", default=[], metavar="TOPIC=x,y,z,qw,qx,qy,qz",
                     help="a stream's frame in the recording frame (m, unit quaternion w first)")
    bag.add_argument("--clock", choices=("header", "receive"), default="header",
                     help="sample times: header stamps (default) or receive (bag log) times")
    bag.add_argument("--planar", action="store_true",
                     help="the box cannot tilt: accept a --box-pose of positions only (TOPIC:X,Y,Z), which is "
                          "refused without it, and record the trials' tilt, flip and heading as unknown (the box "
                          "rests on the table at box.size_z / 2; needs the object; see below)")
    camera = bag.add_argument_group("box poses from camera images of its AprilTags (instead of --box-pose)")
    camera.add_argument("--box-image", metavar="TOPIC",
                        help="sensor_msgs/Image (mono8, rgb8, bgr8) or CompressedImage of the tagged box: one box "
                             "pose per image that gives one (see below); needs --camera and the object")
    camera.add_argument("--camera", metavar="FILE",
                        help="the camera set-up file (a params file with a tag_detector section: tags, "
                             "base_from_camera, camera_info_topic)")
    camera.add_argument("--camera-info", metavar="TOPIC",
                        help="sensor_msgs/CameraInfo of the camera (default: the camera file's camera_info_topic)")
    _add_common_options(bag)
    bag.set_defaults(handler=run_bag)


def _register_csv(sources: argparse._SubParsersAction) -> None:
    table = sources.add_parser(
        "csv",
        help="pose recordings in CSV files (t, 3-D or planar box pose, optional pusher position) → trials",
        description="Convert CSV pose recordings (data not in bags) into trials, like 'sim2real import bag'.",
        epilog=CSV_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    table.add_argument("files", nargs="+", metavar="FILE", help="CSV recording (one or more, each once)")
    _add_common_options(table)
    table.set_defaults(handler=run_csv)


def _missing_source(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        parser.error("choose a source to import: cube-toss, bag or csv")
        return 2

    return handler


def run_cube_toss(args: argparse.Namespace) -> int:
    """Import the selected cube tosses; progress on stderr; the run directory on stdout."""
    from sim2real.cli.common import check_output_location, removed_on_interrupt
    from sim2real.cli.progress import progress_bar
    from sim2real.data import cube_toss_npz
    from sim2real.trials.cube_toss import import_cube_tosses

    check_output_location(args.out)
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = progress_bar(total, "import", "toss")
        bar.update(done - bar.n)

    npz = cube_toss_npz() if args.npz is None else args.npz
    try:
        with removed_on_interrupt(args.out):
            trials = import_cube_tosses(npz, args.out, args.tosses, progress=progress,
                                        scene_tolerance_m=args.scene_tolerance / 1000.0, force=args.force,
                                        log=_log)
    finally:
        if bar is not None:
            bar.close()
    print(f"imported {len(trials)}/{len(trials)} tosses", file=sys.stderr)
    print(f"wrote {len(trials)} trials to {args.out}")
    return 0


def _settings(args: argparse.Namespace, clock: str = "header") -> ImportSettings:
    """The :class:`ImportSettings` of the options shared by ``bag`` and ``csv``."""
    import math

    from sim2real.trials.recording import ImportSettings, parse_split
    from sim2real.trials.rigid import RigidTransform, parse_offset, parse_transform

    frames = _frames(args)
    transform = parse_transform(args.transform) if args.transform is not None else RigidTransform()
    box = parse_transform(frames.box_transform, "the box transform", "box_transform") \
        if frames.box_transform is not None else RigidTransform()
    offset = parse_offset(frames.box_offset) if frames.box_offset is not None else RigidTransform()
    tool = parse_offset(frames.tool_offset, "the tool offset", "tool_offset") if frames.tool_offset is not None \
        else RigidTransform()
    return ImportSettings(clock=clock, transform=transform, box_offset=offset, split=parse_split(args.split),
                          outlier_angle_rad=math.radians(args.outlier_angle), outlier_jump_m=args.outlier_jump,
                          tool_offset=tool, object=_object(args), scene_tolerance_m=args.scene_tolerance / 1000.0,
                          force=args.force, box_transform=box, box_delay_s=frames.box_delay_s,
                          frame_uncertainty=frames.frame_uncertainty)


OBJECT_OPTIONS = ("box_size", "box_mass", "box_density", "pusher_shape", "pusher_radius", "pusher_length", "object")


def _object(args: argparse.Namespace) -> TrialObject | None:
    """The object options as a :class:`TrialObject`; None when none is given."""
    from sim2real.trials.trial_object import object_from_options

    given = [name for name in OBJECT_OPTIONS if getattr(args, name) is not None]
    if not given:
        return None
    missing = [f"--{name.replace('_', '-')}" for name in ("box_size", "pusher_shape", "pusher_radius")
               if getattr(args, name) is None]
    if missing:
        raise Sim2RealError(f"the object needs {', '.join(missing)} as well (given: "
                            f"{', '.join('--' + n.replace('_', '-') for n in given)})")
    try:
        size = [float(v) for v in args.box_size.split(",")]
    except ValueError:
        size = []
    if len(size) != 3:
        raise Sim2RealError(f"--box-size '{args.box_size}': expected X,Y,Z, the box edges in m")
    return object_from_options(size, args.pusher_shape, args.pusher_radius, box_mass=args.box_mass,
                               box_density=args.box_density, pusher_length=args.pusher_length, name=args.object)


def _log(line: str) -> None:
    print(f"import: {line}", file=sys.stderr, flush=True)


def _written(count: int, out: object, settings: ImportSettings) -> int:
    """Say what was written (stdout) and, when the trials carry no object, what that means (stderr)."""
    if settings.object is None:
        _log("no object given (--box-size, --box-mass, --pusher-shape, --pusher-radius): the trials cannot be "
             "replayed or fitted until their trial.json has an \"object\", and their scenes were not checked")
    print(f"wrote {count} trials to {out}")
    return 0


def _bag_identity(path: str) -> str:
    """The bag a path names, for telling a bag given twice: a rosbag2 directory, its metadata.yaml and its
    storage files (``.mcap``, ``.db3``) are one."""
    import os

    real = os.path.realpath(path)
    parent = os.path.dirname(real)
    inside = os.path.isfile(real) and os.path.isfile(os.path.join(parent, "metadata.yaml"))
    return parent if inside else real


def _check_box_source(args: argparse.Namespace) -> None:
    """Exactly one of --box-pose and --box-image, and --camera (only) with --box-image."""
    if (args.box_pose is None) == (args.box_image is None):
        raise Sim2RealError("give the box's poses with --box-pose SOURCE or --box-image TOPIC (with --camera FILE), "
                            + ("not both" if args.box_pose is not None else "one of the two"))
    if args.box_image is None:
        given = [o for o, v in (("--camera", args.camera), ("--camera-info", args.camera_info)) if v is not None]
        if given:
            raise Sim2RealError(f"{' and '.join(given)} belong to --box-image (box poses from camera images)")
    elif args.camera is None:
        raise Sim2RealError("--box-image needs the camera set-up file: --camera FILE (tags, base_from_camera)")


def _camera(args: argparse.Namespace, settings: ImportSettings, frame: str | None) -> CameraSelection:
    """The camera of ``--box-image``: its set-up file read and the import's options checked against it."""
    from sim2real.trials.camera_source import camera_selection
    from sim2real.vision.setup import load_camera_setup

    where = f"--box-image {args.box_image}"
    if args.planar:
        raise Sim2RealError(f"{where}: --planar is for a box source of positions only; the tags give the box's "
                            "tilt: leave --planar out")
    if not settings.transform.is_identity:
        raise Sim2RealError(f"{where}: the camera's box poses are in the arm base frame already (base_from_camera "
                            "of --camera), so --transform has nothing to map: bring the pusher into that frame with "
                            "--frame TOPIC=FRAME (its static transforms) or --stream-transform TOPIC=...")
    if settings.object is None:
        raise Sim2RealError(f"{where} places the box's tags by its size: give the object (--box-size, --box-mass "
                            "or --box-density, --pusher-shape, --pusher-radius)")
    try:
        setup = load_camera_setup(args.camera)
    except Sim2RealError as err:
        raise type(err)(f"--camera: {err}") from None
    return camera_selection(args.box_image, setup, settings.object.parameters, args.camera_info, frame)


def _read_bags(bags: list[str], selection: BagSelection) -> list[Recording]:
    """Read every bag; with a camera, check all their topics first and show the images' progress on stderr."""
    from pathlib import Path

    from sim2real.cli.progress import progress_bar
    from sim2real.trials.bag_import import check_bag_topics, read_bag

    if selection.camera is None:
        return [read_bag(Path(bag), selection) for bag in bags]
    for bag in bags:
        check_bag_topics(Path(bag), selection)
    recordings = []
    for bag in bags:
        bar = None

        def progress(done: int, total: int, name: str = Path(bag).name) -> None:
            nonlocal bar
            if bar is None:
                bar = progress_bar(total, f"detect {name}", "image")
            bar.update(done - bar.n)

        try:
            recordings.append(read_bag(Path(bag), selection, progress=progress))
        finally:
            if bar is not None:
                bar.close()
    return recordings


def run_bag(args: argparse.Namespace) -> int:
    """Import ROS 1/2 bags; one line per trial on stderr; the run directory on stdout."""
    from sim2real.cli.common import check_given_once, check_output_location, removed_on_interrupt
    from sim2real.trials.bag_import import BagSelection, parse_pose_source
    from sim2real.trials.bag_sources import StreamOptionText, stream_options
    from sim2real.trials.recording_import import check_new_run_dir, import_recordings

    _check_box_source(args)
    out = check_output_location(args.out)
    check_new_run_dir(out)
    check_given_once(args.bags, "bag", key=_bag_identity)
    settings = _settings(args, args.clock)
    if args.planar and args.box_image is None:
        from sim2real.trials.recording import check_planar_settings

        check_planar_settings(settings, "a planar recording (--planar, box positions only)")
    pusher = parse_pose_source(args.pusher_pose, "pusher_pose") if args.pusher_pose else None
    box = parse_pose_source(args.box_pose, "box_pose") if args.box_image is None else None
    box_key = box.key if box is not None else "/" + args.box_image.strip().lstrip("/")
    if pusher is not None and pusher.key == box_key:
        raise Sim2RealError(f"{'--box-pose' if box else '--box-image'} and --pusher-pose name the same source "
                            f"{box_key}")
    options, frame = stream_options(StreamOptionText(args.frame, args.units, args.stamp_field, args.stream_transform),
                                    [s for s in (box, pusher) if s is not None])
    camera = _camera(args, settings, frame) if box is None else None
    box = camera.source if camera is not None else box
    assert box is not None
    selection = BagSelection(box=box, pusher=pusher,
                             joint_states=args.joint_states, frame=frame, streams=options, planar=args.planar,
                             camera=camera)
    recordings = _read_bags(args.bags, selection)
    with removed_on_interrupt(out):
        trials = import_recordings(recordings, out, settings, log=_log)
    return _written(len(trials), out, settings)


def run_csv(args: argparse.Namespace) -> int:
    """Import CSV pose recordings; one line per trial on stderr; the run directory on stdout."""
    from sim2real.cli.common import check_given_once, check_output_location, removed_on_interrupt
    from sim2real.trials.csv_import import read_csv_recording
    from sim2real.trials.recording_import import check_new_run_dir, import_recordings

    out = check_output_location(args.out)
    check_new_run_dir(out)
    check_given_once(args.files, "CSV recording")
    settings = _settings(args)
    recordings = [read_csv_recording(path) for path in args.files]
    with removed_on_interrupt(out):
        trials = import_recordings(recordings, out, settings, log=_log)
    return _written(len(trials), out, settings)
