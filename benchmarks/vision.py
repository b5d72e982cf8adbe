"""Benchmark: box poses from a camera (issue 60): accuracy on synthetic views, time per frame, and the stand-in
camera against the stand-in's truth during a push.

``python -m benchmarks.vision --json`` prints one JSON object:

* ``grid``: per tag size (3, 4.5, 6 cm), distance (0.3, 0.5, 0.7, 1.0 m) and tilt band (0-15 … 45-60°), over
  ``--views`` random views each (random in-plane turn and offset; blur 0.5-1.2 px, noise 1-4 grey levels):
  the detection rate, the rate of single-tag poses refused as ambiguous, and the median position and angle
  error of the accepted poses, for the default corner refinement (``edges``) and OpenCV's ``subpix``;
* ``timing``: per 640 × 480 frame of the stand-in's box on one core (``cv2.setNumThreads(1)``): rendering,
  detection with corner refinement, and the whole estimate (detect + PnP + base frame), medians and 95th
  percentiles of ``--frames`` frames;
* ``graph_latency``: a stand-in run seen by the camera, from each box pose's capture stamp to the recorder's
  receipt of it, and what the image transport, the detector and the pose's transport add to the camera's own
  (modelled) exposure-to-arrival latency;
* ``small_tags``: a 3 cm tag at 0.7 and 1 m (13-27 px) at 640 × 480 and at 1280 × 720: the detection rate;
* ``standin_push``: the stand-in's standard pushes at 0.30 and 0.45 m (the first topples the box, the second
  does not) driven along the planned reference, seen by the stand-in camera at 30 Hz: detection rate and the
  camera-vs-truth position and yaw errors (median, 95th percentile, max) over the frames.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import cv2
import numpy as np

from sim2real.spatial import from_rotation_vector, to_matrix
from sim2real.spatial.rigid import from_pose, rigid, rotation_angle, to_pose
from sim2real.vision.camera import PinholeCamera
from sim2real.vision.detect import TagDetector
from sim2real.vision.pose import Refusal, single_tag_solutions, unambiguous_tag_pose
from sim2real.vision.render import Optics, plane_of, render
from sim2real.vision.tags import TagMount

SIZES = (0.03, 0.045, 0.06)
DISTANCES = (0.3, 0.5, 0.7, 1.0)
TILTS = ((0, 15), (15, 30), (30, 45), (45, 60))


def _view(rng: np.random.Generator, distance: float, tilt_deg: float) -> np.ndarray:
    azimuth = rng.uniform(0.0, 2.0 * np.pi)
    tilt = to_matrix(from_rotation_vector(np.radians(tilt_deg) * np.array([np.cos(azimuth), np.sin(azimuth), 0.0])))
    spin = to_matrix(from_rotation_vector(np.array([0.0, 0.0, rng.uniform(-np.pi, np.pi)])))
    offset = rng.uniform(-0.08, 0.08, size=2) * distance
    return rigid(tilt @ spin, [offset[0], offset[1], distance])


def grid(views: int, seed: int) -> list[dict[str, Any]]:
    """Detection and pose accuracy of a single tag over sizes, distances and tilts."""
    camera = PinholeCamera.ideal()
    detectors = {name: TagDetector(refine=name) for name in ("edges", "subpix")}
    rows = []
    for size in SIZES:
        plate = plane_of(2 * size, 2 * size, [(TagMount(0, size, np.eye(4)), np.eye(4))], "36h11")
        for distance in DISTANCES:
            for low, high in TILTS:
                rng = np.random.default_rng(seed)
                row: dict[str, Any] = {"size_m": size, "distance_m": distance, "tilt_deg": [low, high]}
                found: dict[str, list[Any]] = {name: [] for name in detectors}
                for _ in range(views):
                    truth = _view(rng, distance, rng.uniform(low, high))
                    image = render(camera, [(truth, plate)], Optics(rng.uniform(0.5, 1.2), rng.uniform(1.0, 4.0)), rng)
                    for name, detector in detectors.items():
                        seen = [d for d in detector.detect(image) if d.tag_id == 0]
                        found[name].append((truth, seen[0] if len(seen) == 1 else None))
                for name, results in found.items():
                    detected = [(t, d) for t, d in results if d is not None]
                    accepted = [(t, unambiguous_tag_pose(d, size, camera)) for t, d in detected]
                    good = [(t, a[0]) for t, a in accepted if not isinstance(a, Refusal)]
                    best = [(t, single_tag_solutions(d, size, camera)[0][0]) for t, d in detected]
                    row[name] = {
                        "detected": round(len(detected) / views, 4),
                        "ambiguous": round(1 - len(good) / max(len(detected), 1), 4),
                        "position_mm": _median([1000 * np.linalg.norm(p[:3, 3] - t[:3, 3]) for t, p in good]),
                        "angle_deg": _median([np.degrees(rotation_angle(p, t)) for t, p in good]),
                        "best_position_mm": _median([1000 * np.linalg.norm(p[:3, 3] - t[:3, 3]) for t, p in best]),
                    }
                rows.append(row)
    return rows


def small_tags(views: int, seed: int) -> list[dict[str, Any]]:
    """A 3 cm tag at 0.7 and 1 m, 0-45° of tilt, seen at 640 × 480 (focal 615 px) and 1280 × 720 (920 px): the
    detection rate where the tag is 13-27 px wide."""
    detector = TagDetector()
    size = 0.03
    plate = plane_of(2 * size, 2 * size, [(TagMount(0, size, np.eye(4)), np.eye(4))], "36h11")
    rows = []
    for camera in (PinholeCamera.ideal(), PinholeCamera.ideal(1280, 720, 920.0)):
        for distance in (0.7, 1.0):
            rng = np.random.default_rng(seed)
            seen = 0
            for _ in range(views):
                truth = _view(rng, distance, rng.uniform(0.0, 45.0))
                image = render(camera, [(truth, plate)], Optics(rng.uniform(0.5, 1.2), rng.uniform(1.0, 4.0)), rng)
                seen += [d.tag_id for d in detector.detect(image)] == [0]
            rows.append({"frame_px": [camera.width, camera.height], "focal_px": float(camera.matrix[0, 0]),
                         "size_m": size, "distance_m": distance, "views": views, "detected": round(seen / views, 4),
                         "tag_px": round(float(camera.matrix[0, 0]) * size / distance, 1)})
    return rows


def _median(values: list[float]) -> float | None:
    return round(float(np.median(values)), 4) if values else None


def _stats(values: list[float]) -> dict[str, float]:
    array = np.asarray(values, dtype=float)
    return {"median": round(float(np.median(array)), 4), "p95": round(float(np.percentile(array, 95)), 4),
            "max": round(float(array.max()), 4)}


def _standin_frames(distance: float) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """The stand-in world's box states of a standard push at ``distance``, driven along the planned reference."""
    from sim2real.control import load_experiment_config, plan_push
    from sim2real.hardware.standin import StandinWorld, load_standin
    from sim2real.sim import BoxState
    from sim2real.trials.experiment import requested_box_pose, start_joints

    config = load_standin()
    push = load_experiment_config().push_of(0)
    world = StandinWorld(config, BoxState.at_rest(*requested_box_pose(distance, config.params)))
    table = float(config.params["contact.table_height"])
    plan = plan_push(world.arm, push, table)
    start = start_joints(world.arm, push, table)
    states = []
    for t in np.arange(0.0, 0.5, 0.01):
        world.add_joint_sample(float(t), start)
        states += world.advance()
    for t, q in zip(plan.t, plan.position, strict=True):
        world.add_joint_sample(0.5 + float(t), q)
        states += world.advance()
    return [(float(t), np.asarray(p), np.asarray(q)) for t, p, q in states]


def standin_push(distance: float) -> dict[str, Any]:
    """The stand-in camera's box poses against the stand-in's truth over one push."""
    from sim2real.hardware.standin import load_standin
    from sim2real.hardware.standin_camera import StandinCamera
    from sim2real.vision.estimate import BoxPoseEstimator

    config = load_standin()
    camera = StandinCamera(config.camera, config.params)
    estimator = BoxPoseEstimator(camera.camera, camera.setup.box_tags(config.params), camera.setup.base_from_camera)
    position, angle, frames = [], [], 0
    for t, p, q in _standin_frames(distance):
        frame = camera.observe(t, p, q)
        if frame is None:
            continue
        frames += 1
        seen = estimator.estimate(frame.image)
        if isinstance(seen, Refusal):
            continue
        position.append(1000 * float(np.linalg.norm(seen.position - p)))
        angle.append(float(np.degrees(rotation_angle(from_pose(seen.position, seen.quaternion), from_pose(p, q)))))
    return {"distance_m": distance, "frames": frames, "tally": estimator.tally.as_dict(),
            "position_error_mm": _stats(position), "orientation_error_deg": _stats(angle)}


def timing(frames: int) -> dict[str, Any]:
    """Per-frame times on one core of the stand-in camera's 640 × 480 frames of the box at rest."""
    from sim2real.hardware.standin import load_standin
    from sim2real.hardware.standin_camera import StandinCamera
    from sim2real.trials.experiment import requested_box_pose
    from sim2real.vision.estimate import BoxPoseEstimator

    cv2.setNumThreads(1)
    config = load_standin()
    camera = StandinCamera(config.camera, config.params)
    estimator = BoxPoseEstimator(camera.camera, camera.setup.box_tags(config.params), camera.setup.base_from_camera)
    position, quaternion = requested_box_pose(0.40, config.params)
    rng = np.random.default_rng(0)
    render_s, detect_s, estimate_s = [], [], []
    for k in range(frames):
        shift = np.array([rng.uniform(-0.05, 0.05), rng.uniform(-0.05, 0.05), 0.0])
        turn = from_pose(np.asarray(position) + shift, np.asarray(quaternion))
        turn[:3, :3] = to_matrix(from_rotation_vector(np.array([0.0, 0.0, rng.uniform(-np.pi, np.pi)])))
        started = time.perf_counter()
        frame = camera.observe(k / camera.config.rate_hz, *to_pose(turn))
        render_s.append(time.perf_counter() - started)
        assert frame is not None
        started = time.perf_counter()
        estimator.detector.detect(frame.image)
        detect_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        estimator.estimate(frame.image)
        estimate_s.append(time.perf_counter() - started)
    estimate = _stats([1000 * s for s in estimate_s])
    latency = 1000 * camera.config.latency
    return {"frame_px": [camera.camera.width, camera.camera.height], "frames": frames,
            "render_ms": _stats([1000 * s for s in render_s]), "detect_ms": _stats([1000 * s for s in detect_s]),
            "estimate_ms": estimate, "tally": estimator.tally.as_dict(), "camera_latency_ms": latency}


def graph_latency() -> dict[str, Any]:
    """The latency in the ROS graph: a stand-in push seen by the camera (``sim2real run --mode standin
    --box-pose camera``), each recorded box pose's log time (the recorder's receive time) less its capture stamp;
    less the stand-in camera's modelled exposure-to-arrival latency, what the image transport, the detector and
    the pose's transport add."""
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from rosbags.highlevel import AnyReader

    from sim2real.hardware.standin import load_standin

    camera_ms = 1000 * load_standin().camera.latency
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_LOG_DIR": tmp,
               "ROS_DOMAIN_ID": os.environ.get("ROS_DOMAIN_ID", "73")}
        done = subprocess.run([sys.executable, "-m", "sim2real", "run", "--mode", "standin", "--box-pose", "camera",
                               "--distances", "0.30", "--out", f"{tmp}/run"], env=env, capture_output=True,
                              text=True, timeout=600)
        latency: list[float] = []
        for bag in Path(tmp, "run").glob("*/*.mcap"):
            with AnyReader([bag]) as reader:
                connections = [c for c in reader.connections if c.topic.endswith("real/box_pose")]
                for connection, log_ns, raw in reader.messages(connections=connections):
                    stamp = reader.deserialize(raw, connection.msgtype).header.stamp
                    latency.append((log_ns - (stamp.sec * 10**9 + stamp.nanosec)) / 1e6)
    if not latency:
        return {"exit": done.returncode, "error": "no box pose recorded", "stderr": done.stderr[-500:]}
    total = _stats(latency)
    return {"exit": done.returncode, "poses": len(latency), "capture_to_recorded_ms": total,
            "camera_latency_ms": camera_ms,
            "pipeline_ms": {k: round(v - camera_ms, 3) for k, v in total.items()}}


def main(argv: list[str] | None = None) -> int:
    """Run and print the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    parser.add_argument("--views", type=int, default=40, help="views per grid cell (default 40)")
    parser.add_argument("--frames", type=int, default=200, help="frames timed (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = {"timing": timing(args.frames), "graph_latency": graph_latency(),
              "standin_push": [standin_push(d) for d in (0.30, 0.45)], "grid": grid(args.views, args.seed),
              "small_tags": small_tags(2 * args.views + 20, args.seed),
              "cpus": os.cpu_count()}
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
