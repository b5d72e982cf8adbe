"""``recorder``: one rosbag2 (mcap) per trial, written with :class:`sim2real.trials.TrialBagWriter`.

Subscribes to every contract topic of both platforms and the reference. The experiment's
events on ``experiment/trial_event`` (std_msgs/String, JSON) drive it:

* ``{"event": "run", ...}``: writes ``run.json`` in ``out_dir`` with the run metadata;
* ``{"event": "start", "trial", "index", "distance", "start_ns", "end_ns", "push"}``: opens the
  trial's bag; messages stamped inside ``[start_ns, end_ns]`` are written (also those that
  arrived shortly before the event); ``push`` (the trial's own push, ``{field: value}``; None
  for a replay) goes into the trial's trial.json, also when the trial is closed incomplete;
* ``{"event": "end", "meta": {...}}``: waits (at most ``drain_timeout``) until every stream
  the trial needs (:func:`sim2real.trials.coverage.expected_streams`) has delivered messages
  stamped past the trial's end, then closes the bag with trial.json (``meta`` plus the
  simulator parameters, each stream's ``coverage`` and each platform's ``loop_health``) and
  answers on ``recorder/trial_written`` with the path, ``complete`` and the problems. A trial
  whose streams do not cover its window is written ``complete: false`` with the reason, and no
  outcome is computed from a box-pose stream that was cut short.

Closing the node (Ctrl-C) closes an open trial with ``complete: false``: what was recorded
stays readable.

Bags follow rosbag2: each message is logged at its receive time (this node's clock when its
callback ran) with its header stamp (acquisition time) unchanged; the trial window selects by
header stamp. For 3D viewers every trial also holds ``/tf``, ``/tf_static``,
``/robot_description`` and ``/markers`` (:mod:`sim2real.trials.scene`): the arms and boxes of
the run's platforms (``platforms`` of the run event; both when it did not say), sized by the
simulator parameters.

Parameters (type, default: meaning, unit)::

    out_dir        string, required: the run directory (run.json and one directory per trial)
    drain_timeout  double, 20.0: longest wait after the end event for late messages, s (the
                   experiment has seen every stream pass the trial's end before it sends the
                   event; what is still due is queued in this process, which a busy machine can
                   keep more than 5 s behind)
    box.*, contact.*, arm.*, pd.*, sim.dt ...  the simulator parameters (stored in trial.json)
"""

from __future__ import annotations

import collections
import functools
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg

from sim2real.nodes.common import (
    CAMERA_RESULT_TOPIC,
    HARD_STEP_TOPIC,
    LATCHED_QOS,
    REFERENCE_TOPIC,
    SOLVER_STATUS_TOPIC,
    STREAM_QOS,
    TRIAL_EVENT_TOPIC,
    TRIAL_WRITTEN_TOPIC,
    LeanNode,
    declare_sim_params,
    joint_arrays,
    now_ns,
    ns_of,
    pose_arrays,
    report_matches,
    trajectory_from_msg,
)
from sim2real.nodes.process import run_node
from sim2real.nodes.streams import StreamHub, subscribe_stream
from sim2real.trials import PLATFORMS, JointReference, SceneSpec, TrialBagWriter, write_run_meta
from sim2real.trials.coverage import StreamTracker, coverage_problems, expected_streams, loop_health
from sim2real.trials.experiment import TrialWindow
from sim2real.trials.meta import TrialMeta

PLATFORM_TOPICS = ("joint_states", "joint_command", "box_pose", "pusher_pose")
#: Hard-step files kept per platform and trial.
MAX_HARD_STEP_FILES = 20
#: Default ``drain_timeout`` (s). In a loaded test run the recorder closed a trial at the old 5 s while
#: the rest of its streams was still queued in this process (named as late right after); it stays below
#: the experiment's 30 s wait for the trial to be written.
DRAIN_TIMEOUT_S = 20.0


class RecorderNode(LeanNode):
    """Per-trial bag writer (see the module docstring)."""

    def __init__(self, name: str = "recorder", streams: StreamHub | None = None, **kwargs: object) -> None:
        super().__init__(name, **kwargs)  # type: ignore[arg-type]
        out_dir = str(self.declare_parameter("out_dir", "").value)
        if not out_dir:
            raise ValueError("parameter out_dir is required: the run directory to write (-p out_dir:=DIR)")
        self.out_dir = Path(out_dir)
        self.drain_timeout = float(self.declare_parameter("drain_timeout", DRAIN_TIMEOUT_S).value)
        self.params = declare_sim_params(self)
        self._lock = threading.Lock()
        self._writer: TrialBagWriter | None = None
        self._window: TrialWindow | None = None
        #: trial.json keys of the open trial that its start event gave (``push``).
        self._trial_meta: dict[str, Any] = {}
        self._tracker: StreamTracker | None = None
        self._pending_end: tuple[dict[str, Any], float] | None = None  # (end event, monotonic deadline)
        self._recent: collections.deque[tuple[int, str, Callable[[TrialBagWriter], None]]] = collections.deque(
            maxlen=4000)
        self.written: list[Path] = []
        #: The last closed trial's window and the streams that delivered a message inside it after it closed.
        self._closed: tuple[TrialWindow, set[str]] | None = None
        self._run: dict[str, Any] = {}
        self._platforms: tuple[str, ...] = PLATFORMS  # until the run event names them
        self._pub_written = self.create_publisher(String, TRIAL_WRITTEN_TOPIC, LATCHED_QOS)
        for ns in ("real", "sim"):
            for series in PLATFORM_TOPICS:
                msg_type = JointState if series in ("joint_states", "joint_command") else PoseStamped
                subscribe_stream(self, streams, msg_type, f"{ns}/{series}",
                                 functools.partial(self._on_data, ns, series))
        self._solver: dict[str, dict[str, Any]] = {}
        self._hard_steps: dict[str, list[dict[str, Any]]] = {"real": [], "sim": []}
        for ns in ("real", "sim"):
            self.create_subscription(String, SOLVER_STATUS_TOPIC.format(ns=ns),
                                     lambda msg, ns=ns: self._on_solver(ns, msg), LATCHED_QOS)
            self.create_subscription(String, HARD_STEP_TOPIC.format(ns=ns),
                                     lambda msg, ns=ns: self._on_hard_step(ns, msg), STREAM_QOS)
        #: The camera's per-image results (stamp ns, refusal reason or ""), newest last (10 min at 30 Hz).
        self._camera: collections.deque[tuple[int, str]] = collections.deque(maxlen=18000)
        self.create_subscription(String, CAMERA_RESULT_TOPIC, self._on_camera, STREAM_QOS)
        self.create_subscription(JointTrajectoryMsg, REFERENCE_TOPIC, self._on_reference, LATCHED_QOS)
        self.create_subscription(String, TRIAL_EVENT_TOPIC, self._on_event, LATCHED_QOS)
        self.create_timer(0.02, self._close_when_drained)
        report_matches(self, "recorder", also=streams)
        self.get_logger().info(f"recording trials into {self.out_dir}")

    # --- data -----------------------------------------------------------------------------
    def _on_data(self, ns: str, series: str, msg: Any) -> None:
        received = now_ns(self)  # log time; the header stamp (acquisition time) is kept as it came
        stamp = ns_of(msg.header.stamp)
        if series in ("joint_states", "joint_command"):
            position, velocity, effort = joint_arrays(msg)
            if series == "joint_states":
                def write(w: TrialBagWriter) -> None:
                    w.write_joint_state(ns, received, position, velocity, effort, stamp_ns=stamp)
            else:
                def write(w: TrialBagWriter) -> None:
                    w.write_joint_command(ns, received, velocity, position, stamp_ns=stamp)
        else:
            position, quaternion = pose_arrays(msg)
            method = "write_box_pose" if series == "box_pose" else "write_pusher_pose"

            def write(w: TrialBagWriter) -> None:
                getattr(w, method)(ns, received, position, quaternion, stamp_ns=stamp)
        self._offer(stamp, write, f"{ns}/{series}")

    def _on_reference(self, msg: JointTrajectoryMsg) -> None:
        received = now_ns(self)
        start_ns, trajectory = trajectory_from_msg(msg)
        reference = JointReference(trajectory.t, trajectory.position, trajectory.velocity)

        def write(w: TrialBagWriter) -> None:
            w.write_reference(JointReference(reference.t + (start_ns - w.start_ns) / 1e9, reference.position,
                                             reference.velocity), t_ns=received)
        self._offer(start_ns, write)

    def _on_solver(self, ns: str, msg: String) -> None:
        with self._lock:
            self._solver[ns] = json.loads(msg.data)

    def _on_camera(self, msg: String) -> None:
        result = json.loads(msg.data)
        with self._lock:
            self._camera.append((int(result["stamp_ns"]), str(result["refused"])))

    def _camera_tally(self, start_ns: int, end_ns: int) -> dict[str, Any] | None:
        """The camera's images stamped in ``[start_ns, end_ns]``: counts, detection rate, refusal reasons (None:
        no camera)."""
        inside = [refused for stamp, refused in self._camera if start_ns <= stamp <= end_ns]
        if not self._camera:
            return None
        reasons = collections.Counter(r for r in inside if r)
        poses = len(inside) - sum(reasons.values())
        return {"images": len(inside), "poses": poses, "rate": round(poses / len(inside), 4) if inside else 0.0,
                "refused": dict(sorted(reasons.items()))}

    def _on_hard_step(self, ns: str, msg: String) -> None:
        with self._lock:
            if self._writer is not None and len(self._hard_steps[ns]) < MAX_HARD_STEP_FILES:
                self._hard_steps[ns].append(json.loads(msg.data))

    def _offer(self, stamp: int, write: Callable[[TrialBagWriter], None], stream: str = "") -> None:
        with self._lock:
            if stream and self._tracker is not None:
                self._tracker.add(stream, stamp)
            if self._writer is not None and self._window is not None and self._window.contains(stamp):
                write(self._writer)
                return
            self._recent.append((stamp, stream, write))
            closed = self._closed
            if closed is None or not stream or stream in closed[1] or not closed[0].contains(stamp):
                return
            closed[1].add(stream)  # said once per stream and trial
        window = closed[0]
        self.get_logger().warning(
            f"a {stream} message stamped {(stamp - window.start_ns) / 1e9:.3f} s into {window.name} arrived after "
            "that trial was closed: it is not in the bag, and the trial's coverage was judged without it")

    # --- events ---------------------------------------------------------------------------
    def _on_event(self, msg: String) -> None:
        event = json.loads(msg.data)
        kind = event.get("event")
        if kind == "run":
            run = {k: v for k, v in event.items() if k != "event"}  # run.json, not a trial's metadata
            self._run = {k: run[k] for k in ("mode", "mirror", "engine") if k in run}
            named = [ns for ns in run.get("platforms") or () if ns in PLATFORMS]
            self._platforms = tuple(named) or PLATFORMS
            run["params"] = {name: float(value) for name, value in self.params.items()}
            write_run_meta(self.out_dir, run)
        elif kind == "start":
            push = event.get("push")
            self._start(TrialWindow.from_dict(event), {"push": push} if isinstance(push, dict) else {})
        elif kind == "end":
            self._end(event)

    def _start(self, window: TrialWindow, trial_meta: dict[str, Any]) -> None:
        self._close_when_drained(force=True)
        with self._lock:
            if self._writer is not None:
                self._writer.close({**self._trial_meta, "note": "superseded by the next trial"}, complete=False)
            if (self.out_dir / window.name).exists():
                self.get_logger().warning(f"trial {window.name} already recorded; ignoring its start event")
                self._writer = self._window = None
                self._trial_meta = {}
                return
            self._writer = TrialBagWriter(self.out_dir, window.name, start_ns=window.start_ns)
            self._writer.write_scene(SceneSpec.from_params(self._platforms, self._platforms, self.params))
            self._window = window
            self._trial_meta = trial_meta
            self._tracker = StreamTracker(window.start_ns, window.end_ns)
            self._hard_steps = {"real": [], "sim": []}
            for stamp, stream, write in list(self._recent):
                if stream:
                    self._tracker.add(stream, stamp)
                if window.contains(stamp):
                    write(self._writer)
            self._recent.clear()

    def _meta(self, extra: dict[str, Any]) -> dict[str, Any]:
        meta = {**self._run, **extra}
        meta["params"] = {name: float(value) for name, value in self.params.items()}
        if self._solver:
            meta["solver"] = dict(self._solver)
        return meta

    def _write_hard_steps(self, trial_dir: Path) -> None:
        """Save the trial's hard steps as ``<trial>/hard_steps/<ns>_step_<k>.json`` (never overwriting)."""
        directory = trial_dir / "hard_steps"
        for ns, steps in self._hard_steps.items():
            for number, data in enumerate(steps):
                path = directory / f"{ns}_step_{data.get('step_index') or number:05d}.json"
                if not path.exists():
                    directory.mkdir(parents=True, exist_ok=True)
                    path.write_text(json.dumps(data, indent=1) + "\n")
        self._hard_steps = {"real": [], "sim": []}

    def _end(self, event: dict[str, Any]) -> None:
        """Note the end event; the trial closes once its streams are drained (:meth:`_close_when_drained`)."""
        with self._lock:
            window = self._window
            if self._writer is None or window is None or event.get("trial") != window.name:
                return
            self._pending_end = (event, time.monotonic() + self.drain_timeout)
        self._close_when_drained()

    def _close_when_drained(self, force: bool = False) -> None:
        """Close the pending trial once every expected stream passed the window's end, or at the deadline."""
        with self._lock:
            if self._pending_end is None or self._tracker is None:
                return
            event, deadline = self._pending_end
            expected = self._expected(self._tracker)
            if not (force or self._tracker.delivered(expected) or time.monotonic() >= deadline):
                return
            self._pending_end = None
            writer, window, tracker, trial_meta = self._writer, self._window, self._tracker, self._trial_meta
            if window is not None:
                self._closed = (window, set())
            self._writer = self._window = self._tracker = None
            self._trial_meta = {}
            if writer is None or window is None:
                return
            meta, problems = self._closing_meta({**trial_meta, **(event.get("meta") or {})}, tracker, expected)
            complete = bool(event.get("complete", True)) and not problems
            path = writer.close(meta, complete=complete)
            self._write_hard_steps(path)
        if problems:
            self.get_logger().warning(f"{window.name} recorded incomplete: {'; '.join(problems.values())}")
        self.written.append(path)
        self._pub_written.publish(String(data=json.dumps({"trial": window.name, "path": str(path),
                                                          "complete": complete,
                                                          "problems": list(problems.values())})))

    def _expected(self, tracker: StreamTracker) -> list[str]:
        """The streams this trial must cover: the platforms' required series and any other that delivered."""
        return expected_streams(self._platforms, [name for name, c in tracker.streams.items() if c.count])

    def _closing_meta(self, extra: dict[str, Any], tracker: StreamTracker,
                      expected: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
        """trial.json meta with coverage and loop health; the streams that do not cover the window."""
        meta = self._meta(extra)
        problems = coverage_problems(tracker, expected)
        meta["coverage"] = tracker.as_dict()
        camera = self._camera_tally(tracker.start_ns, tracker.end_ns)
        if camera is not None:
            meta["camera"] = camera
        period = float(self.params["sim.dt"])
        health = {ns: loop_health(tracker.streams[f"{ns}/joint_command"].stamps_ns, period)
                  for ns in self._platforms if f"{ns}/joint_command" in tracker.streams}
        meta["loop_health"] = {ns: h.as_dict() for ns, h in health.items() if h is not None}
        if problems:
            note = "recording incomplete: " + "; ".join(problems.values())
            before = TrialMeta(meta)
            meta["note"] = f"{before.note}; {note}" if before.note else note
            outcomes = before.outcomes
            for ns in self._platforms:
                cut = problems.get(f"{ns}/box_pose")
                if cut is not None:
                    outcomes[ns] = {"error": f"no outcome: {cut}"}
            meta["outcomes"] = outcomes
        return meta, problems

    def close(self) -> None:
        """Close an open trial as incomplete (Ctrl-C): everything recorded is kept."""
        self._close_when_drained(force=True)
        with self._lock:
            writer, window, tracker, trial_meta = self._writer, self._window, self._tracker, self._trial_meta
            self._writer = self._window = self._tracker = None
            self._trial_meta = {}
            if writer is not None and window is not None:
                extra = {**trial_meta, "initial_distance_m": window.distance, "note": "interrupted"}
                meta = (self._meta(extra) if tracker is None
                        else self._closing_meta(extra, tracker, self._expected(tracker))[0])
                path = writer.close(meta, complete=False)
                self._write_hard_steps(path)
                self.written.append(path)


def main(args: list[str] | None = None) -> int:
    """Console script ``recorder``."""
    return run_node(RecorderNode, args, name="recorder", doc=__doc__, sim_params=True, example="out_dir:=/tmp/run")


if __name__ == "__main__":
    import sys

    sys.exit(main())
