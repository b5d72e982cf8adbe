"""How the real platform reaches the arm: each route declares what it needs; nothing compares names.

A route is one implementation of the real platform's contract (``real/joint_states``,
``real/joint_command``, ``real/pusher_pose``, ``real/fault``; the shared PD law in its control
loop; the reference on ``reference/joint_trajectory``). :func:`sim2real.nodes.runner.run_experiment`,
``sim2real run --via`` and ``launch/box_push.launch.py via:=`` ask a route for its node, whether it
needs a robot address, what stands in for the lab's hardware in ``standin`` mode, and its node
parameters:

================  ======================  ==================================================
route             node                    reaches the arm through
================  ======================  ==================================================
``sdk``           ``xarm_node``           the vendor SDK on the controller's address
                                          (:class:`sim2real.hardware.XArmDriver`)
``ros2_control``  ``ros2_control_arm``    the lab's running ros2_control stack (xarm_ros2's
                                          ``UFRobotSystemHardware`` with ``velocity_control``):
                                          ``std_msgs/Float64MultiArray`` on
                                          ``/<controller>/commands``, ``/joint_states`` back
================  ======================  ==================================================

Imports no rclpy (the CLI checks its arguments against these routes before ROS starts).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sim2real.errors import Sim2RealError

#: Joint names of the xArm 6 in xarm_ros2 (no prefix): the default command order.
XARM6_JOINTS: tuple[str, ...] = ("joint1", "joint2", "joint3", "joint4", "joint5", "joint6")
#: Default forward velocity controller of the lab's stack. xarm_ros2 itself (humble, jazzy, rolling)
#: declares only ``joint_state_broadcaster`` and ``xarm6_traj_controller`` (a JointTrajectoryController);
#: ``velocity_control:=true`` only switches its hardware interface to joint velocity mode. The lab adds a
#: ``velocity_controllers/JointGroupVelocityController`` on the velocity interfaces; this name follows
#: xarm_ros2's ``xarm6_*_controller`` pattern (config/ros2_control_xarm6.yaml declares it).
DEFAULT_CONTROLLER = "xarm6_velo_controller"
#: ``ros2_control_arm``'s /joint_states budget (s) against the stand-in stack: its broadcaster is a Python
#: thread sharing a process (and the GIL) with the contact engine, and on a loaded 2-core machine its
#: messages were seen 300 ms apart (a real controller_manager keeps the node's default, 0.1 s).
STANDIN_STATE_TIMEOUT = 1.0
#: Update rate of the stand-in stack (Hz): xarm_ros2 runs 150 Hz; the stand-in's Python loop, 100 Hz.
STANDIN_UPDATE_RATE = 100.0
#: Driver link budgets (s) of ``xarm_node`` against the stand-in's emulated controller: it shares a
#: process with the contact engine, whose steps delay replies by tens of ms without any link fault; and
#: the emulated arm's auto-stop is 0.3 s, not the real arm's 0.1 s: on a 2-core machine with the suite's
#: computing part beside it, ``xarm_node`` was kept from the CPU for 102-125 ms in every one of three
#: demo experiments (fresh clone fc42), each a latched ``auto_stop`` that ended the experiment. A longer
#: gap is still a fault; a shorter one is a late tick, recorded in the trial's loop health (a watchdog
#: gap: STARVED) and screened by the demo. A real controller keeps the driver's own tighter defaults
#: (DriverConfig: 35 ms stall, 10 ms latency, 0.1 s auto-stop).
STANDIN_LINK: dict[str, float] = {"link.max_round_trip": 0.15, "link.latency_budget": 0.05,
                                  "link.command_duration": 0.3}


@dataclass(frozen=True)
class RouteOptions:
    """What the user chose for the real platform (the CLI's or the launch file's arguments).

    Attributes
    ----------
    robot_ip : str or None
        Controller IPv4 address (routes that need one).
    robot_port : int
        Controller command port.
    controller : str or None
        ros2_control controller name (default: the route's).
    joints : tuple of str
        Joint names in the controller's command order (default: ``joint1`` … ``joint6``).
    """

    robot_ip: str | None = None
    robot_port: int = 502
    controller: str | None = None
    joints: tuple[str, ...] = XARM6_JOINTS

    def __post_init__(self) -> None:
        if self.controller is not None:
            check_controller_name(self.controller)


#: A ROS 2 name relative to the root: tokens of letters, digits and underscores, none starting with a
#: digit, joined by single slashes (``/<controller>/commands`` must be a valid topic name).
_CONTROLLER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*")


def check_controller_name(name: str, option: str = "--controller") -> str:
    """Refuse a controller name that makes no valid ROS 2 topic ``/<name>/commands``, before anything starts.

    Parameters
    ----------
    name : str
        The ros2_control controller name (e.g. ``xarm6_velo_controller``, or ``arm/velocity_controller``).
    option : str
        The option that gave it, for messages.

    Returns
    -------
    str
        ``name``.

    Raises
    ------
    Sim2RealError
        One line: the ROS 2 name rules (letters, digits, underscores and single inner slashes; no token
        starting with a digit).
    """
    if not _CONTROLLER_NAME.fullmatch(name):
        raise Sim2RealError(f"{option} {name!r} is not a ROS 2 controller name: use letters, digits and "
                            f"underscores, with '/' between parts, none starting with a digit (e.g. "
                            f"{DEFAULT_CONTROLLER})")
    return name


@dataclass(frozen=True)
class Route:
    """One way to drive the real arm (see the module docstring).

    Attributes
    ----------
    name : str
        ``--via`` value.
    node : str
        Node (and console script) that is the real platform.
    needs_robot_address : bool
        The node connects to the controller itself: ``--robot-ip`` is required in real and
        mirror mode (there is no default address).
    standin : str
        The node that stands in for the lab's hardware in ``standin`` mode (it also publishes
        ``real/box_pose``, the stand-in world's mocap).
    summary : str
        One line for ``--help``.
    parameters : callable
        ``(options, standin_host, standin_port) -> {node: {parameter: value}}``: the route's node
        parameters, and its stand-in's when ``standin_host`` is given.
    """

    name: str
    node: str
    needs_robot_address: bool
    standin: str
    summary: str
    parameters: Callable[[RouteOptions, str | None, int], dict[str, dict[str, Any]]] = field(repr=False)


def _sdk_parameters(options: RouteOptions, standin_host: str | None, standin_port: int) -> dict[str, dict[str, Any]]:
    if standin_host is not None:
        return {"xarm_node": {"robot_ip": standin_host, "command_port": int(standin_port), **STANDIN_LINK},
                "standin_world": {"host": standin_host, "command_port": int(standin_port)}}
    return {"xarm_node": {"robot_ip": str(options.robot_ip), "command_port": int(options.robot_port)}}


def _ros2_control_parameters(options: RouteOptions, standin_host: str | None,
                             standin_port: int) -> dict[str, dict[str, Any]]:
    controller = options.controller or DEFAULT_CONTROLLER
    sections: dict[str, dict[str, Any]] = {
        "ros2_control_arm": {"controller": controller, "joints": list(options.joints)}}
    if standin_host is not None:
        sections["ros2_control_arm"]["state_timeout"] = STANDIN_STATE_TIMEOUT
        sections["ros2_control_standin"] = {"host": standin_host, "command_port": int(standin_port),
                                            "controller": controller, "joints": list(options.joints),
                                            "update_rate": STANDIN_UPDATE_RATE}
    return sections


ROUTES: Mapping[str, Route] = {
    "sdk": Route("sdk", "xarm_node", True, "standin_world",
                 "the vendor SDK on --robot-ip (sim2real's own driver)", _sdk_parameters),
    "ros2_control": Route("ros2_control", "ros2_control_arm", False, "ros2_control_standin",
                          "the lab's running ros2_control stack (Float64MultiArray on /<controller>/commands, "
                          "/joint_states)", _ros2_control_parameters),
}


def route(name: str) -> Route:
    """The route called ``name``.

    Raises
    ------
    Sim2RealError
        Unknown route.
    """
    try:
        return ROUTES[name]
    except KeyError:
        raise Sim2RealError(f"unknown route '{name}' (expected one of {', '.join(ROUTES)})") from None


def parse_joints(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """Joint names in command order from ``"joint1,...,joint6"`` (or a sequence); six distinct names.

    Raises
    ------
    Sim2RealError
        Not six distinct non-empty names.
    """
    if text is None:
        return XARM6_JOINTS
    parts = [p.strip() for p in (text.split(",") if isinstance(text, str) else text)]
    if len(parts) != 6 or not all(parts) or len(set(parts)) != 6:
        raise Sim2RealError(f"controller joints must be six distinct names in command order, got {list(parts)}")
    return tuple(parts)
