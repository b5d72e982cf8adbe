"""The box-push experiment as separate ROS 2 nodes (the same graph as `sim2real run`).

    ros2 launch sim2real box_push.launch.py mode:=standin distances:="[0.30, 0.45]" out_dir:=/tmp/run
    ros2 launch sim2real box_push.launch.py mode:=mirror via:=ros2_control namespace:=sim2real
    ros2 launch sim2real box_push.launch.py mode:=sim experiment_file:=designed.yaml out_dir:=/tmp/run

Arguments: mode (mirror | sim | real | standin), mirror (closed | commands), engine (ours |
mujoco: the sim platform's box engine), via (sdk | ros2_control: how the real platform reaches
the arm, sim2real.nodes.routes), robot_ip (via sdk), controller and controller_joints (via
ros2_control: the lab's forward velocity controller and its joints in command order; empty: the
route's defaults), params_file (simulator parameters for the sim node and both PD controllers,
e.g. a file written by `sim2real fit`; a file that does not exist stops the launch with one message
before any node starts), experiment_file (the experiment node's params file, default the package's
config/experiment.yaml: start distances, the push, and each trial's own push in its optional
trials section; read as the node will before any node starts: a bad file is one message),
distances (default: the experiment file's; refused with one message for a file whose trials have
pushes of their own), out_dir, namespace (every node of the graph in it; the lab's
/joint_states and /<controller>/commands stay absolute) and use_sim_time (the nodes follow /clock,
e.g. of `ros2 bag play --clock`; sim mode only: a real arm runs on wall time). box_pose (mocap |
camera): in real and mirror mode the box pose comes from the motion-capture topic configured in
config/mocap.yaml (mocap_bridge), or with box_pose:=camera from camera images of the box's AprilTags
(tag_detector, configured by camera_file, default config/camera.yaml: the camera driver's image and
CameraInfo topics, the tags, the camera's pose in the arm base frame); in standin mode the stand-in's
mocap, or its rendered camera images. Keep DDS on loopback with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST.

    ros2 launch sim2real box_push.launch.py mode:=mirror robot_ip:=<IPv4> box_pose:=camera \
        camera_file:=camera.yaml

Every node is required: when the experiment node exits (all trials recorded, or the run
failed) or any other node dies, the whole launch shuts down. `ros2 launch` exits 0 only when
the experiment recorded every trial, non-zero otherwise (`sim2real run` gives finer statuses).
"""

import os

import yaml
from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from sim2real.control import load_experiment_config
from sim2real.nodes.launch_status import experiment_exited
from sim2real.nodes.routes import DEFAULT_CONTROLLER, ROUTES, RouteOptions, parse_joints
from sim2real.paths import read_text_file
from sim2real.trials.experiment import parse_distances

PACKAGE = "sim2real"
PLATFORMS = {"mirror": ("real", "sim"), "standin": ("real", "sim"), "real": ("real",), "sim": ("sim",)}
STANDIN_HOST = "127.0.0.2"
STANDIN_PORT = 5020


def _section(path, node):
    """The ``ros__parameters`` of ``node`` in params file ``path`` (its own key or ``/**``): a file key
    ``mocap_bridge:`` would match the node only outside a namespace."""
    document = yaml.safe_load(read_text_file(path, "params file")) or {}
    section = document.get(node) or document.get("/**") or {}
    return section.get("ros__parameters", {})


def _camera_section(mode, camera_file, config):
    """The tag detector's parameters: the stand-in camera's own set-up in standin mode, else camera_file's
    (read as the node will: a bad file stops the launch with one message)."""
    if mode == "standin":
        from sim2real.hardware.standin import load_standin

        setup = load_standin(os.path.join(config, "standin.yaml")).camera.setup()
    else:
        from sim2real.vision.setup import load_camera_setup

        setup = load_camera_setup(camera_file)
    return setup.document()["tag_detector"]["ros__parameters"]


def _nodes(context):
    share = get_package_share_directory(PACKAGE)
    config = os.path.join(share, "config")
    mode = LaunchConfiguration("mode").perform(context)
    mirror = LaunchConfiguration("mirror").perform(context)
    engine = LaunchConfiguration("engine").perform(context)
    via = LaunchConfiguration("via").perform(context)
    namespace = LaunchConfiguration("namespace").perform(context).strip()
    sim_time = LaunchConfiguration("use_sim_time").perform(context).strip().lower()
    box_pose = LaunchConfiguration("box_pose").perform(context).strip()
    camera_file = LaunchConfiguration("camera_file").perform(context)
    params_file = LaunchConfiguration("params_file").perform(context)
    read_text_file(params_file, "params_file")  # missing or unreadable: one line, nothing started
    experiment_file = LaunchConfiguration("experiment_file").perform(context)
    read_text_file(experiment_file, "experiment_file")
    experiment = load_experiment_config(experiment_file)  # as the node will read it: a bad file stops the launch here
    text = LaunchConfiguration("distances").perform(context).strip().strip("[]").strip()
    # distances:= overrides the file's (a /** params file after it); refused when its trials have their own pushes
    overrides = {"distances": list(experiment.with_distances(parse_distances(text)).distances)} if text else {}
    if mode not in PLATFORMS:
        raise RuntimeError(f"mode must be one of {sorted(PLATFORMS)}, got {mode!r}")
    if via not in ROUTES:
        raise RuntimeError(f"via must be one of {sorted(ROUTES)}, got {via!r}")
    if box_pose not in ("mocap", "camera"):
        raise RuntimeError(f"box_pose must be mocap or camera, got {box_pose!r}")
    if sim_time not in ("true", "false"):
        raise RuntimeError(f"use_sim_time must be true or false, got {sim_time!r}")
    platforms = PLATFORMS[mode]
    if sim_time == "true" and "real" in platforms:
        raise RuntimeError(f"use_sim_time:=true applies to mode:=sim only (mode:={mode} drives an arm in real time)")
    route = ROUTES[via]
    joints = LaunchConfiguration("controller_joints").perform(context).strip("[] ")
    options = RouteOptions(robot_ip=LaunchConfiguration("robot_ip").perform(context).strip(), robot_port=502,
                           controller=LaunchConfiguration("controller").perform(context).strip() or None,
                           joints=parse_joints(joints or None))
    if "real" in platforms and route.needs_robot_address and mode != "standin" and not options.robot_ip:
        raise RuntimeError(f"mode:={mode} drives a real xArm: give its address, robot_ip:=<IPv4> (there is no "
                           "default; sim2real never connects to an address it was not given)")
    # Every node: the namespace, and the clock (use_sim_time: /clock instead of the system clock).
    common = {"namespace": namespace, "output": "screen"}
    clock = [{"use_sim_time": sim_time == "true"}]
    sim_params = [params_file]
    nodes = []
    sections = route.parameters(options, STANDIN_HOST if mode == "standin" else None, STANDIN_PORT)
    if box_pose == "camera" and "real" not in platforms:
        raise RuntimeError(f"box_pose:=camera needs a real platform (mode:={mode} has none)")
    if "real" in platforms:
        if mode == "standin":
            camera = {"box_pose": box_pose} if box_pose == "camera" else {}
            nodes.append(Node(package=PACKAGE, executable=route.standin, name=route.standin, **common,
                              on_exit=Shutdown(reason=f"{route.standin} exited"),
                              parameters=[{"world_file": os.path.join(config, "standin.yaml"),
                                           **sections[route.standin], **camera}]))
        # connect_wait: the stand-in (or the controller, or the lab's stack) may still be starting. The
        # route's node runs the real platform's PD law in its loop, with the gains of params_file.
        nodes.append(Node(package=PACKAGE, executable=route.node, name=route.node, **common,
                          on_exit=Shutdown(reason=f"{route.node} exited"),
                          parameters=[*sim_params, {**sections[route.node], "connect_wait": 60.0}]))
        if box_pose == "camera":  # the box pose from the camera's images of its tags, in the arm base frame
            nodes.append(Node(package=PACKAGE, executable="tag_detector", name="tag_detector", **common,
                              on_exit=Shutdown(reason="tag_detector exited"),
                              parameters=[*sim_params, _camera_section(mode, camera_file, config)]))
        elif mode != "standin":  # the box pose of the lab's motion capture, in the arm base frame
            nodes.append(Node(package=PACKAGE, executable="mocap_bridge", name="mocap_bridge", **common,
                              on_exit=Shutdown(reason="mocap_bridge exited"),
                              parameters=[_section(os.path.join(config, "mocap.yaml"), "mocap_bridge")]))
    if "sim" in platforms:
        nodes.append(Node(package=PACKAGE, executable="sim_node", name="sim_node", **common,
                          on_exit=Shutdown(reason="sim_node exited"),
                          parameters=[*sim_params, {"mirror": mirror, "engine": engine}, *clock]))
        nodes.append(Node(package=PACKAGE, executable="pd_controller", name="sim_pd_controller", **common,
                          on_exit=Shutdown(reason="sim_pd_controller exited"),
                          parameters=[*sim_params, {"platform": "sim", "mirror": mirror}, *clock]))
    nodes.append(Node(package=PACKAGE, executable="recorder", name="recorder", **common,
                      on_exit=Shutdown(reason="recorder exited"),
                      parameters=[*sim_params, {"out_dir": LaunchConfiguration("out_dir").perform(context)},
                                  *clock]))
    # Robot description (latched) and live joint states for 3D viewers (not /tf: no tf2_msgs wheel).
    nodes.append(Node(package=PACKAGE, executable="live_view", name="live_view", **common,
                      on_exit=Shutdown(reason="live_view exited"),
                      parameters=[*sim_params, {"platforms": list(platforms)}, *clock]))
    # The experiment exits when every trial is recorded (0) or the run failed (1, 130): the launch ends with it
    # and exits non-zero unless the experiment exited 0 (sim2real.nodes.launch_status).
    nodes.append(Node(package=PACKAGE, executable="experiment", name="experiment", **common,
                      on_exit=experiment_exited,
                      parameters=[*sim_params, experiment_file,
                                  {"mode": mode, "mirror": mirror, "engine": engine, **overrides}, *clock]))
    return nodes


def generate_launch_description():
    share = get_package_share_directory(PACKAGE)
    return LaunchDescription([
        DeclareLaunchArgument("mode", default_value="standin", description="mirror | sim | real | standin"),
        DeclareLaunchArgument("mirror", default_value="closed", description="closed | commands"),
        DeclareLaunchArgument("engine", default_value="ours", description="ours | mujoco (the sim platform's box)"),
        DeclareLaunchArgument("via", default_value="sdk",
                              description="sdk (the vendor SDK on robot_ip) | ros2_control (the lab's running stack)"),
        DeclareLaunchArgument("robot_ip", default_value="",
                              description="xArm controller IPv4 address; required for mode real and mirror via sdk"),
        DeclareLaunchArgument("controller", default_value=DEFAULT_CONTROLLER,
                              description="via ros2_control: the forward velocity controller (/<name>/commands)"),
        DeclareLaunchArgument("controller_joints", default_value="",
                              description="via ros2_control: its joints in command order, comma-separated "
                              "(empty: joint1..joint6)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of every node of the graph"),
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="true: follow /clock (e.g. ros2 bag play --clock); mode sim only"),
        DeclareLaunchArgument("params_file", default_value=os.path.join(share, "config", "params.yaml"),
                              description="simulator parameters (ROS 2 params file; must exist)"),
        DeclareLaunchArgument("experiment_file", default_value=os.path.join(share, "config", "experiment.yaml"),
                              description="the experiment node's params file (distances, push, trials)"),
        DeclareLaunchArgument("distances", default_value="",
                              description="box start distances, m, e.g. \"[0.30, 0.45]\" (default: the experiment "
                              "file's)"),
        DeclareLaunchArgument("out_dir", default_value="box_push_run", description="run directory to write"),
        DeclareLaunchArgument("box_pose", default_value="mocap",
                              description="mocap | camera (AprilTags on the box seen by a camera: tag_detector)"),
        DeclareLaunchArgument("camera_file", default_value=os.path.join(share, "config", "camera.yaml"),
                              description="box_pose:=camera: the tag detector's camera set-up (topics, tags, "
                              "base_from_camera)"),
        OpaqueFunction(function=_nodes),
    ])
