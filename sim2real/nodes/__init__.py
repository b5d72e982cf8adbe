"""Thin rclpy nodes of the experiment (the only package, with ``sim2real run``, that imports rclpy).

Console scripts: ``xarm_node``, ``sim_node``, ``pd_controller``, ``experiment``, ``recorder``,
``standin_world``, ``mocap_bridge``, ``ros2_control_arm`` and ``ros2_control_standin`` (the real
platform through a lab's ros2_control stack, and a stand-in stack; :mod:`sim2real.nodes.routes`),
``live_view`` (robot description, live joint states, optionally a Foxglove server);
:func:`sim2real.nodes.runner.run_experiment` runs the graph from one command
(:mod:`sim2real.nodes.group` holds the nodes it gives their own process; :mod:`sim2real.nodes.run_children`
starts and watches those processes).

Contract topics (DESIGN.md): ``<ns>/joint_states``, ``<ns>/joint_command``, ``<ns>/box_pose``
(plus ``<ns>/pusher_pose``) with ``ns`` = ``real`` / ``sim``, and ``reference/joint_trajectory``.
Coordination topics: ``experiment/trial_event`` and ``recorder/trial_written`` (std_msgs/String,
JSON), ``experiment/box_request`` (PoseStamped: where the box should be placed), ``sim/reset``
(std_msgs/String, JSON), ``real/fault`` (std_msgs/String, latched: the xArm driver's fault),
service ``experiment/box_placed`` (std_srvs/Trigger, the operator's
confirmation in real and mirror mode).

Nothing here is imported by ``sim2real.nodes`` itself, so importing the package does not load rclpy.
"""
