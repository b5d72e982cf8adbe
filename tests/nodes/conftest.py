"""Fixtures of the node tests."""

import pytest


@pytest.fixture(scope="module")
def ros(ros_env):
    """An initialised rclpy context of its own (the module's domain and log directory: ``ros_env``)."""
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context)
    yield context
    rclpy.try_shutdown(context=context)
