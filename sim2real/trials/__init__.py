"""Trial records: the recording contract shared by the recorder, replay, fit and report.

Run directory layout::

    RUN_DIR/
      run.json                  # run metadata (schema "sim2real.run/1"): mode, mirror, distances,
                                #   params file, versions, created
      <trial_name>/             # one rosbag2 directory per trial, e.g. trial_00_d0.300
        metadata.yaml           # rosbag2 metadata (written by rosbags)
        <trial_name>.mcap       # storage: mcap, typestore ROS2_KILTED
        trial.json              # outcomes, parameters, versions, timing, complete flag

Topics (any subset may be present; ``<ns>`` is ``real`` or ``sim``):

====================================  ==============================  =============================================
topic                                 type                            content
====================================  ==============================  =============================================
``/<ns>/joint_states``                sensor_msgs/msg/JointState      joint1..joint6: position rad, velocity rad/s,
                                                                      effort N·m (zeros if unknown)
``/<ns>/joint_command``               sensor_msgs/msg/JointState      velocity = PD output rad/s, stamped with the
                                                                      send time; position = reference of the tick
                                                                      (or zeros); effort zeros
``/<ns>/box_pose``                    geometry_msgs/msg/PoseStamped   box geometric centre and orientation, arm base
                                                                      frame (``link_base``), m
``/<ns>/pusher_pose``                 geometry_msgs/msg/PoseStamped   pusher sphere centre from FK, arm base frame
``/reference/joint_trajectory``       trajectory_msgs/msg/            one message: the whole reference (positions,
                                      JointTrajectory                 velocities, time_from_start); header stamp =
                                                                      time of the first point (latched)
====================================  ==============================  =============================================

For 3D viewers (:mod:`sim2real.trials.scene`; readers of the trial ignore them): ``/tf``
(tf2_msgs/msg/TFMessage: the arm links ``<ns>/link1``..``<ns>/link6`` from the joint states,
``<ns>/box`` and an arm-less ``<ns>/pusher`` from the poses, parent ``link_base``), latched
``/tf_static``, ``/robot_description`` (std_msgs/msg/String, URDF of the platforms' arms, links
prefixed ``<ns>/``) and ``/markers`` (visualization_msgs/msg/MarkerArray: box cubes, pushers,
table). Latched topics are recorded with a transient-local QoS profile.

Times: bags hold ns since the UNIX epoch (ROS time; a simulated trial starts at the wall-clock
time it was simulated). Log time = receive time, header stamp = acquisition time (offline
writers log at the stamp). Every in-memory time axis is s since the trial start
``timing.start_ns`` (for a bare bag: its first message). Samples are timed by header stamps.

trial.json (``"schema": "sim2real.trial/1"``)::

    {"schema", "trial": name, "complete": bool, "initial_distance_m": float|null,
     "mode": str|null, "mirror": str|null,
     "outcomes": {"real"|"sim": Outcome.as_dict()},
     "params": {name: value}, "versions": {sim2real, numpy, rosbags, python},
     "timing": {"start_ns", "end_ns", "wall_s"}, "topics": {topic: message count},
     "written": ISO time, "push": {field: value} (the trial's own push; runs only),
     ...free extra keys (e.g. "object", "source")}

Writers never leave a half-written trial under its name (temporary hidden directory, then a
rename); an interrupted recording closed with ``complete=False`` keeps everything recorded.

Imports of outside recordings write ordinary trials: :mod:`sim2real.trials.cube_toss` (the
ContactNets tosses), :mod:`sim2real.trials.bag_import` (any lab's ROS 1/2 bags) and
:mod:`sim2real.trials.csv_import` (CSV), the latter two through :mod:`sim2real.trials.recording_import`
(clock, splitting, outlier rejection, frames, all-or-nothing writing).

Public API: :class:`TrialBagWriter`, :func:`write_trial`, :class:`SceneSpec`, :func:`scene_of`, :func:`write_run_meta`,
:func:`read_trial`, :func:`read_run`, :func:`read_run_meta`, :func:`trial_dirs`,
:func:`compute_outcome`, :class:`Outcome`, :func:`outcome_errors` (one outcome against another:
final position 3-D and in the table plane, yaw, flip), :func:`path_gap` and :func:`path_rms` (two
paths over their common time span), the record dataclasses and the schema names.
"""

from sim2real.trials.outcome import (
    Outcome,
    OutcomeErrors,
    compute_outcome,
    outcome_errors,
    path_gap,
    path_rms,
    rotation_matrices,
    tilt_deg,
    up_axis,
)
from sim2real.trials.reader import read_run, read_run_meta, read_trial, trial_dirs
from sim2real.trials.records import (
    JOINT_NAMES,
    PLATFORM_SERIES,
    PLATFORMS,
    JointReference,
    JointSeries,
    PlatformRecord,
    PoseSeries,
    TrialRecord,
)
from sim2real.trials.scene import SceneSpec
from sim2real.trials.schema import (
    BASE_FRAME,
    REFERENCE_TOPIC,
    RUN_JSON,
    RUN_SCHEMA,
    TRIAL_JSON,
    TRIAL_SCHEMA,
    topic,
    trial_name,
    versions,
)
from sim2real.trials.writer import TrialBagWriter, box_size_from_meta, scene_of, write_run_meta, write_trial

__all__ = [
    "BASE_FRAME", "JOINT_NAMES", "PLATFORMS", "PLATFORM_SERIES", "REFERENCE_TOPIC", "RUN_JSON", "RUN_SCHEMA",
    "TRIAL_JSON", "TRIAL_SCHEMA", "JointReference", "JointSeries", "Outcome", "OutcomeErrors", "PlatformRecord",
    "PoseSeries", "SceneSpec", "TrialBagWriter", "TrialRecord", "box_size_from_meta", "compute_outcome",
    "outcome_errors", "path_gap", "path_rms", "read_run", "read_run_meta", "read_trial", "rotation_matrices",
    "scene_of", "tilt_deg", "topic", "trial_dirs", "trial_name", "up_axis", "versions", "write_run_meta",
    "write_trial",
]
