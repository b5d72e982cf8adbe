"""Control: the shared PD law, joint/velocity/workspace limits, the standard push reference,
and the simulated platform loop of the mirror (PD → servo → FK → pusher → engine)."""

from sim2real.control.pd import CommandLimits, PDCommand, PDGains, Workspace, pd_command, pd_law
from sim2real.control.reference import (
    ExperimentConfig,
    JointTrajectory,
    PushConfig,
    load_experiment_config,
    plan_push,
    push_profile,
)
from sim2real.control.tracker import ReferenceTracker

__all__ = [
    "CommandLimits", "ExperimentConfig", "JointTrajectory", "PDCommand", "PDGains", "PushConfig", "ReferenceTracker",
    "Workspace",
    "load_experiment_config", "pd_command", "pd_law", "plan_push", "push_profile",
]
