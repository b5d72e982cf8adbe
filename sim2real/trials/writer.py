"""Writing trials: an incremental rosbag2 (mcap) writer and whole-record helpers.

A trial is written into a hidden temporary directory inside the run directory and renamed
to its final name only when it is closed, so a crash never leaves a half-written trial
under the trial's name. ``close(complete=False)`` (after Ctrl-C, say) keeps what was recorded
and marks trial.json ``"complete": false``.

Time stamps follow rosbag2: a message's log time is when it was received (the recorder's
clock when its callback ran), its header stamp when the data was acquired; offline writers
(simulation, replay, imports without receive times) log at the header stamp. All times are
ns since the UNIX epoch: a recorded trial on the recording's clock, a simulated one from the
wall-clock time it was simulated, a replay on its recording's clock. Every topic is recorded
with the QoS profile it is offered with (latched topics transient-local, so that
``ros2 bag play`` republishes them latched), ``ros_distro`` is ``kilted`` (the message
definitions' release), and :meth:`TrialBagWriter.write_scene` adds what 3D viewers need
(:mod:`sim2real.trials.scene`). Files and directories get the mode the umask asks for.
"""

from __future__ import annotations

import contextlib
import datetime
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from rosbags.rosbag2 import StoragePlugin

from sim2real.errors import InputError, Sim2RealError
from sim2real.filemodes import follow_umask
from sim2real.trials import scene as _scene
from sim2real.trials.jsonio import write_json_atomic
from sim2real.trials.messages import (
    NS_PER_S,
    joint_state_cdr,
    joint_trajectory_cdr,
    pose_stamped_cdr,
    shared_typestore,
)
from sim2real.trials.meta import TrialMeta
from sim2real.trials.outcome import compute_outcome, heading_unknown, planar_platforms, tilt_unknown
from sim2real.trials.records import PLATFORMS, JointReference, PoseSeries, TrialRecord
from sim2real.trials.schema import (
    BAG_METADATA,
    BASE_FRAME,
    MSGTYPE_JOINT_TRAJECTORY,
    REFERENCE_TOPIC,
    RUN_JSON,
    RUN_SCHEMA,
    SERIES_MSGTYPE,
    TRIAL_JSON,
    TRIAL_SCHEMA,
    check_trial_name,
    topic,
    versions,
)
from sim2real.trials.type_hash import Writer  # rosbags' Writer, with rosbag2's type hashes in the MCAP channels

#: ``ros_distro`` written into metadata.yaml: the release whose message definitions the bags use.
ROS_DISTRO = "kilted"


def _check_ns(ns: str) -> str:
    if ns not in PLATFORMS:
        raise InputError(f"unknown platform namespace '{ns}' (expected one of {PLATFORMS})")
    return ns


def box_size_from_meta(meta: Mapping[str, Any]) -> np.ndarray:
    """Box edge lengths (3,) in m: trial.json ``params`` box.size_*, else ``object.size_m``, else nominal."""
    from sim2real.params import spec

    info = TrialMeta(meta)
    params, obj = info.params, info.object or {}
    size_m = obj.get("size_m")
    if isinstance(size_m, (list, tuple)) and len(size_m) == 3:
        fallback = [float(v) for v in size_m]
    else:
        fallback = [spec(f"box.size_{a}").nominal for a in "xyz"]
    return np.array([float(params.get(f"box.size_{a}", fallback[i])) for i, a in enumerate("xyz")])


class TrialBagWriter:
    """Write one trial incrementally: messages as they arrive, trial.json on :meth:`close`.

    Parameters
    ----------
    run_dir : path
        Run directory (created if missing).
    trial_name : str
        Name of the trial directory and of its ``.mcap`` file.
    start_ns : int, optional
        Trial start, ns (ROS time); the zero of every in-memory time axis. Default: now.
    frame_id : str
        frame_id written into pose headers (the arm base frame).

    Examples
    --------
    >>> w = TrialBagWriter(run_dir, "trial_00_d0.300", start_ns=t0)       # doctest: +SKIP
    >>> w.write_joint_state("real", t_ns, position, velocity, effort)     # doctest: +SKIP
    >>> w.write_box_pose("real", t_ns, box_xyz, box_wxyz)                 # doctest: +SKIP
    >>> w.close({"initial_distance_m": 0.3, "mode": "standin"})           # doctest: +SKIP
    """

    def __init__(self, run_dir: str | Path, trial_name: str, start_ns: int | None = None,
                 frame_id: str = BASE_FRAME) -> None:
        self.run_dir = Path(run_dir)
        self.name = check_trial_name(trial_name)
        self.final_path = self.run_dir / self.name
        if self.final_path.exists():
            raise InputError(f"trial {self.final_path} already exists; refusing to overwrite it")
        self.start_ns = int(time.time_ns() if start_ns is None else start_ns)
        self.frame_id = frame_id
        self._typestore = shared_typestore()
        self._wall_start = time.monotonic()
        self._connections: dict[str, Any] = {}
        self._counts: dict[str, int] = {}
        self._box_samples: dict[str, list[tuple[float, np.ndarray, np.ndarray]]] = {}
        self._last_ns = self.start_ns
        self._closed = False
        self._scene: _scene.SceneSpec | None = None
        self._lock = threading.Lock()  # write_* may be called from several executor threads
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._tmp_parent = Path(tempfile.mkdtemp(prefix=f".{self.name}.", suffix=".partial", dir=self.run_dir))
        self._bag_path = self._tmp_parent / self.name
        try:
            self._writer = Writer(self._bag_path, version=9, storage_plugin=StoragePlugin.MCAP)
            self._writer.open()
            follow_umask(self._bag_path, directory=True)  # rosbags creates it 0755 whatever the umask
        except Exception:
            shutil.rmtree(self._tmp_parent, ignore_errors=True)
            raise

    # -- context manager -------------------------------------------------------------------
    def __enter__(self) -> TrialBagWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        """Close normally; keep an interrupted trial (``complete: false``); discard on other errors."""
        if self._closed:
            return
        if exc_type is None:
            self.close()
        elif issubclass(exc_type, KeyboardInterrupt):
            self.close(complete=False)
        else:
            self.abort()

    # -- messages ----------------------------------------------------------------------------
    def _write(self, topic_name: str, msgtype: str, t_ns: int, data: bytes) -> None:
        with self._lock:
            if self._closed:
                raise Sim2RealError(f"trial writer for {self.name} is already closed")
            connection = self._connections.get(topic_name)
            if connection is None:
                connection = self._writer.add_connection(topic_name, msgtype, typestore=self._typestore,
                                                         offered_qos_profiles=[_scene.topic_qos(topic_name)])
                self._connections[topic_name] = connection
            self._writer.write(connection, int(t_ns), data)
            self._counts[topic_name] = self._counts.get(topic_name, 0) + 1
            self._last_ns = max(self._last_ns, int(t_ns))

    def write_joint_state(self, ns: str, t_ns: int, position: Any, velocity: Any, effort: Any | None = None,
                          stamp_ns: int | None = None) -> None:
        """Record a measured joint state on ``/<ns>/joint_states``.

        Parameters
        ----------
        ns : {"real", "sim"}
        t_ns : int
            Receive (log) time, ns; also the header stamp unless ``stamp_ns`` is given.
        position, velocity, effort : array_like, shape (6,)
            rad, rad/s, N·m (effort None → zeros).
        """
        stamp = int(t_ns if stamp_ns is None else stamp_ns)
        data = joint_state_cdr(self._typestore, stamp, position, velocity, effort)
        self._write(topic(_check_ns(ns), "joint_states"), SERIES_MSGTYPE["joint_states"], t_ns, data)
        scene = self._scene
        if scene is not None and ns in scene.arms:
            self._write(_scene.TF_TOPIC, _scene.MSGTYPE_TF, t_ns,
                        _scene.tf_message_cdr(self._typestore, stamp, _scene.chain_transforms(ns, position)))

    def write_joint_command(self, ns: str, t_ns: int, velocity: Any, position: Any | None = None,
                            stamp_ns: int | None = None) -> None:
        """Record a PD command on ``/<ns>/joint_command`` (velocity field = command, rad/s).

        ``position`` may carry the reference position of that tick (rad); zeros when None.
        The header stamp is the send time (``stamp_ns``, default ``t_ns``).
        """
        stamp = int(t_ns if stamp_ns is None else stamp_ns)
        data = joint_state_cdr(self._typestore, stamp, position, velocity, None)
        self._write(topic(_check_ns(ns), "joint_command"), SERIES_MSGTYPE["joint_command"], t_ns, data)

    def _write_pose(self, ns: str, series: str, t_ns: int, position: Any, quaternion_wxyz: Any,
                    stamp_ns: int | None) -> None:
        stamp = int(t_ns if stamp_ns is None else stamp_ns)
        data = pose_stamped_cdr(self._typestore, stamp, position, quaternion_wxyz, self.frame_id)
        self._write(topic(_check_ns(ns), series), SERIES_MSGTYPE[series], t_ns, data)
        scene = self._scene
        if scene is not None and ns in scene.platforms and (series == "box_pose" or ns not in scene.arms):
            child = _scene.frame(ns, _scene.BOX_FRAME if series == "box_pose" else _scene.PUSHER_FRAME)
            self._write(_scene.TF_TOPIC, _scene.MSGTYPE_TF, t_ns, _scene.tf_message_cdr(
                self._typestore, stamp, [(self.frame_id, child, position, quaternion_wxyz)]))

    def write_box_pose(self, ns: str, t_ns: int, position: Any, quaternion_wxyz: Any,
                       stamp_ns: int | None = None) -> None:
        """Record a box pose on ``/<ns>/box_pose``: centre (3,) m and (w, x, y, z), arm base frame."""
        self._write_pose(ns, "box_pose", t_ns, position, quaternion_wxyz, stamp_ns)
        stamp = int(t_ns if stamp_ns is None else stamp_ns)
        with self._lock:
            self._box_samples.setdefault(ns, []).append(
                ((stamp - self.start_ns) / NS_PER_S, np.asarray(position, float).reshape(3),
                 np.asarray(quaternion_wxyz, float).reshape(4)))

    def write_pusher_pose(self, ns: str, t_ns: int, position: Any, quaternion_wxyz: Any = (1.0, 0.0, 0.0, 0.0),
                          stamp_ns: int | None = None) -> None:
        """Record the pusher sphere centre (3,) m on ``/<ns>/pusher_pose`` (orientation: flange)."""
        self._write_pose(ns, "pusher_pose", t_ns, position, quaternion_wxyz, stamp_ns)

    def write_scene(self, spec: _scene.SceneSpec, t_ns: int | None = None) -> None:
        """Write the latched 3D-viewer topics and turn on ``/tf`` for the following messages.

        Writes ``/robot_description`` (when ``spec.arms``), ``/tf_static`` and ``/markers``
        (:mod:`sim2real.trials.scene`); from then on every joint state of an arm platform and
        every box pose (and arm-less pusher pose) of a shown platform also goes to ``/tf``.
        Call it once, before the data.

        Parameters
        ----------
        spec : SceneSpec
            Platforms, arms, box and pusher sizes (frames are relative to ``spec.root_frame``,
            which should be this writer's ``frame_id``).
        t_ns : int, optional
            Stamp and log time of the latched messages, ns (default: the trial start).
        """
        for ns in (*spec.platforms, *spec.arms):
            _check_ns(ns)
        if self._scene is not None:
            raise Sim2RealError(f"trial writer for {self.name}: the scene is already written")
        stamp = self.start_ns if t_ns is None else int(t_ns)
        ts = self._typestore
        if spec.arms:
            self._write(_scene.ROBOT_DESCRIPTION_TOPIC, _scene.MSGTYPE_STRING, stamp,
                        _scene.string_cdr(ts, _scene.robot_description(spec)))
            self._write(_scene.TF_STATIC_TOPIC, _scene.MSGTYPE_TF, stamp,
                        _scene.tf_message_cdr(ts, stamp, _scene.static_transforms(spec)))
        if spec.platforms:
            self._write(_scene.MARKERS_TOPIC, _scene.MSGTYPE_MARKER_ARRAY, stamp, _scene.markers_cdr(ts, stamp, spec))
        self._scene = spec

    def write_reference(self, reference: JointReference, t_ns: int | None = None) -> None:
        """Record the whole reference as one JointTrajectory on ``/reference/joint_trajectory``.

        The header stamp is the trial start plus ``reference.t[0]``; each point's
        ``time_from_start`` is its offset from that. ``t_ns`` is the log time (default: the stamp).
        """
        if len(reference) == 0:
            raise InputError("cannot record an empty reference trajectory")
        offsets_ns = np.round(reference.t * NS_PER_S).astype(np.int64)
        stamp = self.start_ns + int(offsets_ns[0])
        data = joint_trajectory_cdr(self._typestore, stamp, offsets_ns - offsets_ns[0], reference.position,
                                    reference.velocity)
        self._write(REFERENCE_TOPIC, MSGTYPE_JOINT_TRAJECTORY, stamp if t_ns is None else t_ns, data)

    # -- finishing ---------------------------------------------------------------------------
    def recorded_box_pose(self, ns: str) -> PoseSeries | None:
        """The box poses recorded so far on platform ``ns`` (t relative to the trial start)."""
        samples = self._box_samples.get(ns)
        if not samples:
            return None
        return PoseSeries(np.array([s[0] for s in samples]), np.array([s[1] for s in samples]),
                          np.array([s[2] for s in samples]))

    def _trial_json(self, meta: Mapping[str, Any], complete: bool,
                    touched: Mapping[str, bool | None]) -> dict[str, Any]:
        info = TrialMeta(meta)
        outcomes = info.outcomes
        size = box_size_from_meta(meta)
        planar = planar_platforms(meta)
        for ns in PLATFORMS:
            poses = self.recorded_box_pose(ns)
            if ns not in outcomes and poses is not None:
                try:
                    outcomes[ns] = compute_outcome(poses, size, touched.get(ns)).as_dict()
                except Sim2RealError as err:  # keep the recording; say why there is no outcome
                    outcomes[ns] = {"error": str(err)}
            if ns in planar and isinstance(outcomes.get(ns), Mapping):  # a planar recording shows no tilt
                outcomes[ns] = tilt_unknown(outcomes[ns], heading=not heading_unknown(meta))
        initial = info.initial_distance_m
        if initial is None:
            for ns in PLATFORMS:
                if ns in outcomes and outcomes[ns].get("initial_distance_m") is not None:
                    initial = outcomes[ns]["initial_distance_m"]
                    break
        timing = {
            "start_ns": self.start_ns,
            "end_ns": self._last_ns,
            "wall_s": round(time.monotonic() - self._wall_start, 6),
        }
        content: dict[str, Any] = {
            "schema": TRIAL_SCHEMA,
            "trial": self.name,
            "complete": bool(complete),
            "initial_distance_m": initial,
            "mode": info.mode,
            "mirror": info.mirror,
            "outcomes": outcomes,
            "params": info.params,
            "versions": versions(),
            "timing": info.timing or timing,
            "topics": dict(self._counts),
            "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        for key, value in meta.items():
            if key not in content:
                content[key] = value
        return content

    def close(self, meta: Mapping[str, Any] | None = None, complete: bool = True,
              touched: Mapping[str, bool | None] | None = None) -> Path:
        """Close the bag, write trial.json and move the trial to its final directory.

        Parameters
        ----------
        meta : mapping, optional
            trial.json keys (``initial_distance_m``, ``mode``, ``mirror``, ``params``,
            ``outcomes``, ``timing``, any extra key). Outcomes missing for a platform that
            recorded box poses are computed with :func:`compute_outcome`, using the box size
            from ``params`` (or ``object.size_m``, or the nominal size). The platform of a planar
            recording (``import.planar``) gets its tilt and flip as unknown
            (:func:`~sim2real.trials.outcome.tilt_unknown`).
        complete : bool
            False marks the trial as interrupted; everything recorded is kept.
        touched : mapping of str to bool, optional
            Per platform, whether the pusher touched the box (stored in computed outcomes).

        Returns
        -------
        pathlib.Path
            The trial directory ``run_dir/trial_name``.
        """
        with self._lock:
            if self._closed:
                raise Sim2RealError(f"trial writer for {self.name} is already closed")
            self._closed = True
        try:
            self._writer.close()
            _set_ros_distro(self._bag_path / BAG_METADATA)
            content = self._trial_json(meta or {}, complete, touched or {})
            write_json_atomic(self._bag_path / TRIAL_JSON, content)
            if self.final_path.exists():
                raise Sim2RealError(f"trial {self.final_path} appeared while recording; refusing to overwrite it")
            self._bag_path.rename(self.final_path)
        except BaseException:
            shutil.rmtree(self._tmp_parent, ignore_errors=True)
            raise
        shutil.rmtree(self._tmp_parent, ignore_errors=True)
        return self.final_path

    def abort(self) -> None:
        """Discard everything written (nothing is left under the run directory)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with contextlib.suppress(Exception):  # the bag is discarded anyway
            self._writer.close()
        shutil.rmtree(self._tmp_parent, ignore_errors=True)


def _set_ros_distro(metadata_path: Path) -> None:
    """Name the ROS release in a closed bag's metadata.yaml (rosbags writes ``ros_distro: rosbags``)."""
    text = metadata_path.read_text(encoding="utf-8")
    fixed = re.sub(r"^(\s*)ros_distro: rosbags$", rf"\g<1>ros_distro: {ROS_DISTRO}", text, count=1, flags=re.MULTILINE)
    if fixed != text:
        metadata_path.write_text(fixed, encoding="utf-8")


def _ns(t: np.ndarray, start_ns: int) -> np.ndarray:
    return start_ns + np.round(np.asarray(t, dtype=float) * NS_PER_S).astype(np.int64)


def scene_of(record: TrialRecord, frame_id: str = BASE_FRAME) -> _scene.SceneSpec:
    """The 3D scene of a whole record: every platform shown, those with joint states as arms.

    Sizes come from ``record.meta`` (``params``, else ``object.size_m``, else nominal values).
    """
    arms = [ns for ns, platform in record.platforms.items() if platform.joint_states is not None]
    return _scene.SceneSpec.from_params(list(record.platforms), arms, record.info.params,
                                        box_size=box_size_from_meta(record.meta).tolist(), root_frame=frame_id)


def write_trial(run_dir: str | Path, record: TrialRecord, scene: bool = True) -> Path:
    """Write a whole :class:`TrialRecord` as ``run_dir/<record.name>/`` (bag + trial.json).

    Messages are written in time order, logged at their stamps. ``record.meta`` supplies the
    trial.json keys (its ``timing.start_ns`` is the zero of the record's time axes; default:
    now), and ``record.meta["complete"]`` (default True) is kept. Refuses to overwrite an
    existing trial; on any failure nothing is left behind.

    Parameters
    ----------
    run_dir : path
        The run directory (created if missing).
    record : TrialRecord
        The trial.
    scene : bool
        Also write ``/tf``, ``/tf_static``, ``/robot_description`` and ``/markers`` for 3D
        viewers (:func:`scene_of`, :meth:`TrialBagWriter.write_scene`).

    Returns
    -------
    pathlib.Path
        The trial directory.
    """
    meta = dict(record.meta)
    size = box_size_from_meta(meta)
    if not np.all(np.isfinite(size) & (size > 0)):
        raise InputError(f"box size must be three positive lengths in m, got {size.tolist()}")
    writer = TrialBagWriter(run_dir, record.name, start_ns=record.info.start_ns)
    try:
        start = writer.start_ns
        events: list[tuple[int, int, Any]] = []  # (t_ns, order, callable)
        order = 0

        def add(t_ns: int, action: Any) -> None:
            nonlocal order
            events.append((int(t_ns), order, action))
            order += 1

        if record.reference is not None:
            ref = record.reference
            add(_ns(ref.t[:1], start)[0], lambda ref=ref: writer.write_reference(ref))
        for ns, platform in record.platforms.items():
            for series_name in ("joint_states", "joint_command"):
                series = getattr(platform, series_name)
                if series is None:
                    continue
                for k, t_ns in enumerate(_ns(series.t, start)):
                    if series_name == "joint_states":
                        add(t_ns, lambda ns=ns, t_ns=t_ns, s=series, k=k: writer.write_joint_state(
                            ns, t_ns, s.position[k], s.velocity[k], s.effort[k]))
                    else:
                        add(t_ns, lambda ns=ns, t_ns=t_ns, s=series, k=k: writer.write_joint_command(
                            ns, t_ns, s.velocity[k], s.position[k]))
            for series_name in ("box_pose", "pusher_pose"):
                poses = getattr(platform, series_name)
                if poses is None:
                    continue
                method = writer.write_box_pose if series_name == "box_pose" else writer.write_pusher_pose
                for k, t_ns in enumerate(_ns(poses.t, start)):
                    add(t_ns, lambda ns=ns, t_ns=t_ns, p=poses, k=k, m=method: m(
                        ns, t_ns, p.position[k], p.quaternion[k]))
        events.sort(key=lambda e: (e[0], e[1]))
        if scene:
            writer.write_scene(scene_of(record), t_ns=min(start, events[0][0]) if events else start)
        for _, _, action in events:
            action()
        complete = bool(meta.pop("complete", True))
        for key in ("schema", "trial", "versions", "topics", "written"):
            meta.pop(key, None)
        return writer.close(meta, complete=complete)
    except BaseException:
        writer.abort()
        raise


def write_run_meta(run_dir: str | Path, meta: Mapping[str, Any]) -> Path:
    """Write ``run_dir/run.json`` (schema ``sim2real.run/1``), creating the directory.

    Parameters
    ----------
    meta : mapping
        Run metadata, e.g. ``mode``, ``mirror``, ``distances_m``, ``params_file``; extra keys kept.
        ``schema``, ``versions`` and ``created`` are filled in unless given.

    Returns
    -------
    pathlib.Path
        Path of run.json (replaced atomically if it existed).
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    content: dict[str, Any] = {
        "schema": RUN_SCHEMA,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(),
    }
    content.update(meta)
    content["schema"] = RUN_SCHEMA
    return write_json_atomic(run_dir / RUN_JSON, content)
