"""Control: the shared PD law, joint/velocity/workspace limits, the standard push reference,
and the simulated platform loop of the mirror (PD → servo → FK → pusher → engine)."""

from sim2real.control.pd import CommandLimits, PDCommand, PDGains, Workspace, pd_command, pd_law
from sim2real.control.reference import (
    TRIAL_PUSH_KEYS,
    ExperimentConfig,
    JointTrajectory,
    PushConfig,
    build_trial_pushes,
    experiment_document,
    load_experiment_config,
    plan_push,
    push_profile,
    save_experiment_config,
)
from sim2real.control.tracker import ReferenceTracker

__all__ = [
    "TRIAL_PUSH_KEYS", "CommandLimits", "ExperimentConfig", "JointTrajectory", "PDCommand", "PDGains", "PushConfig",
    "ReferenceTracker", "Workspace",
    "build_trial_pushes", "experiment_document", "load_experiment_config", "pd_command", "pd_law", "plan_push",
    "push_profile", "save_experiment_config",
]
