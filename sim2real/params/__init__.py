"""Parameter registry and ROS 2 params YAML load/save (the top layer: imports nothing below)."""

from sim2real.params.registry import PARAMETERS, Parameter, ParameterSet, closest_name, coerce, names, spec
from sim2real.params.yaml_io import (
    apply_overrides,
    describe_registry,
    load_params,
    params_to_document,
    parse_override,
    read_node_section,
    read_yaml,
    resolve_params,
    save_params,
)

__all__ = [
    "PARAMETERS", "Parameter", "ParameterSet", "apply_overrides", "closest_name", "coerce",
    "describe_registry", "load_params", "names", "params_to_document", "parse_override",
    "read_node_section", "read_yaml", "resolve_params", "save_params", "spec",
]
