"""Session set-up shared by every test: ROS 2 started by a test stays on loopback.

Tests build their children's environment from ``os.environ``, and rclpy in this process reads
it at the first participant; so both get, from here on, ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``
(whatever the shell had) and the Fast DDS profile that binds every DDS listening port to
127.0.0.1 (``config/fastdds_loopback.xml``; a profile already set in the environment is kept).
Each test still picks its own ``ROS_DOMAIN_ID`` and ``ROS_LOG_DIR``.
"""

from __future__ import annotations

import os

from sim2real.paths import use_loopback_profile

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
use_loopback_profile()
