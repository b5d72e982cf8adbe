"""``sim2real calibrate``: the frames and the box stream's clock of imported pushes, from the pushes themselves."""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sim2real.trials.frame_calibration import Residuals

EPILOG = """\
Reads imported trials (import bag / import csv) that share their import frames, and estimates from
the recordings themselves, with 95 % intervals (sim2real.trials.frame_calibration):
  the tracking frame's planar shift (dx, dy) and turn (dyaw, about the boxes' mean start) in the arm
  base frame, the box height (dz: the resting box's bottom on the table top), the tracking origin's
  offset from the box centre in the box's axes (ox, oy), and the box stream's delay against the
  pusher stream; and, when the pusher's recorded orientation turns over the pushes (5 degrees or
  more), the tool offset's error in the pusher pose's axes (tx, ty, tz; applied when its horizontal
  part is known to 1 mm: with one orientation a tool offset is a frame shift, which dx, dy take up).
  Evidence: while box and pusher move together the pusher touches the face it pushes; before the
  push the box rests on the table.
A correction the trials do not determine (its standard deviation above half its prior scale, e.g. the
origin offset along a face no push met) is reported and not applied. A tilt of the tracking frame is
not estimated.

Writes --out (YAML, format sim2real.frames/1): the --box-transform, --box-offset, --box-delay and
--tool-offset that apply the corrections (--transform stays yours), for 'sim2real import
bag|csv ... --frames FILE', and the estimates with the contact and rest residuals before and after.
Frames as recorded may fail the import's scene checks (a box floating above the table): import
them with --force to calibrate them.

Example:
  sim2real import bag rec/*.bag --box-pose /vicon/block --pusher-pose /probe ... --force --out runs/as_recorded
  sim2real calibrate runs/as_recorded --out frames.yaml
  sim2real import bag rec/*.bag --box-pose /vicon/block --pusher-pose /probe ... --frames frames.yaml \\
      --out runs/calibrated
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``calibrate`` subcommand."""
    parser = subparsers.add_parser(
        "calibrate", help="estimate the frames and the box stream's delay of imported pushes from the pushes",
        description="Estimate, from imported pushes themselves, the tracking frame's planar offset and turn, the "
                    "box height, the tracking origin's offset on the box and the box stream's delay, with 95 % "
                    "intervals; write them as a frames file that 'sim2real import --frames' applies.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bags", nargs="+", metavar="TRIAL", help="trial or run directories of imported pushes "
                        "(at least 2 trials, each with a box pose, a pusher pose and its object)")
    parser.add_argument("--out", required=True, metavar="FILE", help="frames file to write (YAML; must not exist)")
    parser.set_defaults(handler=run)


def _log(line: str) -> None:
    print(f"calibrate: {line}", file=sys.stderr)


def _shown(name: str, value: float) -> str:
    """A correction in a readable unit: mm, deg or ms."""
    if name.endswith("_rad"):
        return f"{math.degrees(value):.3f}°"
    if name.endswith("_s"):
        return f"{1e3 * value:.2f} ms"
    return f"{1e3 * value:.2f} mm"


def _residual_line(label: str, r: Residuals) -> str:
    rest = [1e3 * h for h in r.rest_height]
    return (f"{label}: contact distance median {1e3 * r.contact_median:.2f} mm, 95 % {1e3 * r.contact_p95:.2f} mm, "
            f"deepest penetration {1e3 * r.penetration_max:.2f} mm; resting box bottom above the table "
            f"{min(rest):.2f} to {max(rest):.2f} mm")


def run(args: argparse.Namespace) -> int:
    """Handler of ``sim2real calibrate``."""
    from pathlib import Path

    import yaml

    from sim2real.cli.common import check_output_location, removed_on_interrupt
    from sim2real.errors import Sim2RealError
    from sim2real.sysid.problem import check_unique_names, read_trials
    from sim2real.trials.frame_calibration import CalibrationTrial, calibrate_frames
    from sim2real.trials.frames_file import ImportFrames, frames_document

    out = check_output_location(args.out)
    if out.exists():
        raise Sim2RealError(f"--out {out} exists; choose a new file")
    loaded = read_trials(args.bags)
    if loaded.failures:
        raise Sim2RealError(f"cannot read {loaded.failures[0].line()}")
    check_unique_names(loaded.records)
    frames = [ImportFrames.of_trial(record) for record in loaded.records]
    for record, frame in zip(loaded.records, frames, strict=True):
        if not frame.same_as(frames[0]):
            raise Sim2RealError(f"trial '{record.name}' was imported with other frames than "
                                f"'{loaded.records[0].name}': calibrate trials of one import at a time")
    trials = [CalibrationTrial.from_record(record) for record in loaded.records]
    if len(trials) < 2:
        raise Sim2RealError(f"calibrate needs at least 2 trials (the uncertainty comes from their spread), got "
                            f"{len(trials)}")
    _log(f"{len(trials)} trial(s); estimating the frames from contact and rest")
    calibration = calibrate_frames(trials)
    _log(f"{calibration.contact_samples} contact sample(s); corrections (95 % intervals; the box turn is "
         f"about x = {calibration.pivot[0]:.3f}, y = {calibration.pivot[1]:.3f} m):")
    for name, c in calibration.corrections.items():
        if name == "gap_m":
            continue
        state = "" if c.determined else "  NOT DETERMINED by these trials: not applied"
        _log(f"  {name:9s} {_shown(name, c.value):>11} ± {_shown(name, c.std)}, 95 % [{_shown(name, c.ci95[0])}, "
             f"{_shown(name, c.ci95[1])}]{state}")
    if calibration.tool_note:
        _log(calibration.tool_note)
    _log(_residual_line("as imported", calibration.before))
    _log(_residual_line("calibrated ", calibration.after))
    document = frames_document(calibration, frames[0])
    with removed_on_interrupt(out):
        Path(out).write_text("# sim2real frames: written by 'sim2real calibrate'; 'sim2real import ... --frames FILE' "
                             "applies them\n" + yaml.safe_dump(document, sort_keys=False))
    print(f"wrote {out}: import with --frames {out} (--box-transform {document['box_transform']} --box-offset "
          f"{document['box_offset']} --box-delay {document['box_delay_s']:.6g} --tool-offset "
          f"{document['tool_offset']})")
    return 0
