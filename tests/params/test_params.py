"""Parameter registry, ROS 2 params YAML round trip and the one-line errors of bad input."""

import subprocess
import sys

import pytest
import yaml
from children import HANG_GUARD_S

from sim2real.errors import Sim2RealError
from sim2real.params import (
    PARAMETERS,
    ParameterSet,
    apply_overrides,
    load_params,
    names,
    parse_override,
    save_params,
    spec,
)

CONTRACT_NAMES = [
    "box.mass", "box.size_x", "box.size_y", "box.size_z", "box.com_x", "box.com_y", "box.com_z",
    "contact.mu_table", "contact.mu_pusher", "contact.kappa_grad", "arm.servo_tau", "arm.command_delay",
    "pd.kp", "pd.kd", "sim.dt",
]


def test_registry_holds_the_contract_names_with_units_and_bounds():
    for name in CONTRACT_NAMES:
        p = spec(name)
        assert p.unit and p.description
        assert p.lower <= p.nominal <= p.upper
    assert len(set(names())) == len(PARAMETERS)


def test_box_defaults_are_the_published_box():
    p = ParameterSet.nominal()
    assert (p["box.mass"], p["box.size_x"], p["box.size_y"], p["box.size_z"]) == (0.5, 0.11, 0.13, 0.21)


def test_yaml_round_trip_is_lossless(tmp_path):
    odd = ParameterSet.nominal().replace({
        "box.mass": 0.1 + 0.2, "contact.mu_table": 1 / 3, "arm.servo_tau": 0.0123456789012345,
        "box.com_z": -0.0175, "sim.substeps": 3,
    })
    path = save_params(tmp_path / "fit.yaml", odd, node_key="sim_node")
    document = yaml.safe_load(path.read_text())
    assert document["sim_node"]["ros__parameters"]["box"]["mass"] == 0.1 + 0.2
    again = load_params(path)
    assert again == odd
    assert again.as_dict() == odd.as_dict()


def test_partial_file_keeps_nominal_for_the_rest(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("/**:\n  ros__parameters:\n    contact:\n      mu_table: 0.6\n")
    p = load_params(path)
    assert p["contact.mu_table"] == 0.6
    assert p["box.mass"] == spec("box.mass").nominal


def test_node_sections_select(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        "/**:\n  ros__parameters:\n    box: {mass: 0.6}\n"
        "sim_node:\n  ros__parameters:\n    box: {mass: 0.7}\n"
        "other:\n  ros__parameters:\n    box: {mass: 0.8}\n"
    )
    assert load_params(path, node="sim_node")["box.mass"] == 0.7
    assert load_params(path, node="pd_controller")["box.mass"] == 0.6


def test_overrides():
    p = apply_overrides(ParameterSet.nominal(), ["box.mass=0.62", "pd.kp=12"])
    assert p["box.mass"] == 0.62 and p["pd.kp"] == 12.0
    assert parse_override("sim.substeps=4") == ("sim.substeps", 4)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("box.mas=1", "unknown parameter 'box.mas' (did you mean 'box.mass'?)"),
        ("box.mass=heavy", "'heavy' is not a number"),
        ("box.mass=30", "out of bounds"),
        ("box.mass", "expects NAME=VALUE"),
        ("sim.substeps=2.5", "is not a number"),
        ("box.mass=nan", "must be finite"),
    ],
)
def test_bad_overrides(text, message):
    with pytest.raises(Sim2RealError) as err:
        parse_override(text)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("/**:\n  ros__parameters:\n    box: {mas: 0.5}\n", "unknown parameter 'box.mas' (did you mean 'box.mass'?)"),
        ("/**:\n  ros__parameters:\n    box: {mass: heavy}\n", "must be a number"),
        ("/**:\n  ros__parameters:\n    box: {mass: true}\n", "must be a number"),
        ("/**:\n  ros__parameters:\n    sim: {substeps: 2.5}\n", "must be an integer"),
        ("/**:\n  ros__parameters:\n    contact: {mu_table: -0.1}\n", "out of bounds"),
        ("/**:\n  ros__parameters:\n    box: {mass: [0.5\n", "malformed YAML at line"),
        ("- just\n- a list\n", "not a ROS 2 params file"),
        ("sim_node:\n  parameters: {}\n", "has no 'ros__parameters'"),
    ],
)
def test_bad_files(tmp_path, content, message):
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(Sim2RealError) as err:
        load_params(path)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(Sim2RealError, match="params file not found"):
        load_params(tmp_path / "nope.yaml")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sim2real", *args], capture_output=True, text=True,
                          timeout=HANG_GUARD_S)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "contact.mu_tabel=0.5"], "did you mean 'contact.mu_table'?"),
        (["--set", "box.mass=-1"], "out of bounds"),
        (["--params", "/nonexistent/p.yaml"], "params file not found"),
    ],
)
def test_cli_bad_input_is_one_line_and_nonzero(tmp_path, args, message):
    out = tmp_path / "out.yaml"
    result = _cli("params", *args, "--out", str(out))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sim2real: error:") and message in lines[0]
    assert not out.exists()


def test_cli_writes_loadable_file(tmp_path):
    out = tmp_path / "p.yaml"
    result = _cli("params", "--set", "box.mass=0.55", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert load_params(out)["box.mass"] == 0.55


def test_box_sizes_reach_down_to_a_millimetre_thin_plate():
    """A 9.5 mm steel plate (box.size_z) is representable; below 1 mm any box edge is refused."""
    plate = ParameterSet.nominal().replace({"box.size_z": 0.0095})
    assert plate["box.size_z"] == 0.0095
    for axis in "xyz":
        assert spec(f"box.size_{axis}").lower == 0.001
        assert ParameterSet.nominal().replace({f"box.size_{axis}": 0.001})[f"box.size_{axis}"] == 0.001
        with pytest.raises(Sim2RealError, match=r"out of bounds \[0.001, 1.0\]"):
            ParameterSet.nominal().replace({f"box.size_{axis}": 0.0009})


def test_cli_listing_shows_value_unit_and_bounds_of_every_parameter(capsys):
    from sim2real.cli import main

    assert main(["params", "--set", "box.size_z=0.0095"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["parameter", "value", "unit", "bounds", "meaning"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert list(rows) == list(names())
    for p in PARAMETERS:
        fields = rows[p.name].split()
        assert fields[1] == "=" and fields[3] == p.unit
        bounds = rows[p.name].split("[", 1)[1].split("]", 1)[0]
        low, high = (float(v) for v in bounds.split(","))
        assert (low, high) == pytest.approx((p.lower, p.upper), rel=1e-6)
    assert rows["box.size_z"].split()[2:6] == ["0.0095", "m", "[0.001,", "1]"] and "(changed)" in rows["box.size_z"]
    assert rows["box.mass"].split()[2:6] == ["0.5", "kg", "[0.01,", "20]"] and "(changed)" not in rows["box.mass"]
    assert rows["arm.max_joint_acc"].split()[3] == "rad/s^2"


def test_the_shipped_nominal_file_lists_every_parameter_at_its_registry_default():
    """config/params.yaml is what nodes read: a parameter missing there silently takes the registry
    default, and a user editing the file would not see it (pusher.length and box.inertia_scale were)."""
    from sim2real.params import PARAMETERS, load_params
    from sim2real.paths import config_file

    path = config_file("params.yaml")
    tree = yaml.safe_load(path.read_text())["/**"]["ros__parameters"]
    listed = {f"{group}.{key}" for group, entries in tree.items() for key in entries}
    assert listed == {p.name for p in PARAMETERS}
    loaded = load_params(path)
    assert all(loaded[p.name] == p.nominal for p in PARAMETERS)
