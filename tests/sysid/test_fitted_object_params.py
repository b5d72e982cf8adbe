"""The params file a fit writes describes the box it fitted: the object its trials carry (trial.json
``"object"``) where the fit simulated it, the fit's own values where they were fitted or set; with
several objects the shared file says it holds none, and each per-object file holds its object's.

The fits are short (one iteration on one push per block): what is checked is what the files hold,
not how well the values were found.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures import planar_pushes as pushes

from sim2real.cli import main
from sim2real.params import ParameterSet, load_params
from sim2real.trials.trial_object import TrialObject

#: Two flat blocks (m, kg) and the probe they are pushed with (a rod, m).
BLOCKS = {
    "steel": {"box.size_x": 0.099, "box.size_y": 0.099, "box.size_z": 0.0095, "box.mass": 0.73},
    "alu": {"box.size_x": 0.116, "box.size_y": 0.116, "box.size_z": 0.0127, "box.mass": 0.46},
}
PROBE = {"pusher.radius": 0.005, "pusher.length": 0.10}
SHORT = ["--max-iterations", "1", "--starts", "1", "--horizon", "1"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("objects")
    out = {}
    for k, (name, geometry) in enumerate(BLOCKS.items()):
        truth = ParameterSet.nominal().replace({**geometry, **PROBE})
        obj = TrialObject({**geometry, **PROBE}, "rod", name)
        out[name] = pushes.write_pushes(root / name, pushes.TRAINING[k:k + 1], truth, obj=obj, prefix=name)
    return out


def _fit(tmp_path: Path, bags: list[Path], *extra: str) -> tuple[Path, dict]:
    out = tmp_path / "fitted.yaml"
    code = main(["fit", *map(str, bags), "--free", "contact.mu_table", *SHORT, *extra, "--out", str(out)])
    assert code in (0, 3)  # written; one iteration need not converge
    return out, json.loads(out.with_suffix(".json").read_text())


def _header(path: Path) -> str:
    return "".join(line for line in path.read_text().splitlines(keepends=True) if line.startswith("#"))


def test_one_object_its_geometry_and_mass_are_the_files(runs: dict[str, Path], tmp_path: Path) -> None:
    out, report = _fit(tmp_path, [runs["steel"]])
    fitted = load_params(out)
    for name, value in {**BLOCKS["steel"], **PROBE}.items():
        assert fitted[name] == value, name  # not the nominal 11 x 13 x 21 cm, 0.5 kg box
    assert fitted["contact.mu_table"] == report["values"]["contact.mu_table"]
    header = _header(out)
    assert "box and pusher: the trials' object 'steel', carried by all 1 fitted trial(s)" in header
    assert "pusher rod" in header
    record = report["params_object"]
    assert record["object"] == "steel" and record["from_trials"] is True and record["kept"] == {}
    assert record["values"] == {**BLOCKS["steel"], **PROBE}
    assert [(o["name"], o["params_file"]) for o in record["objects"]] == [("steel", "fitted.yaml")]
    assert report["data"]["trial_objects"][0]["trials"] == ["steel_00"]


def test_fitted_and_set_values_win_over_the_objects(runs: dict[str, Path], tmp_path: Path) -> None:
    out, report = _fit(tmp_path, [runs["steel"]], "--free", "contact.mu_table,box.size_z",
                       "--set", "box.size_z=0.0096", "--set", "box.mass=0.6")
    fitted = load_params(out)
    assert fitted["box.mass"] == 0.6  # set: the fit simulated 0.6 kg, not the object's 0.73 kg
    assert fitted["box.size_z"] == report["values"]["box.size_z"] != BLOCKS["steel"]["box.size_z"]
    steel = BLOCKS["steel"]
    assert (fitted["box.size_x"], fitted["box.size_y"]) == (steel["box.size_x"], steel["box.size_y"])
    assert report["params_object"]["kept"] == {"box.mass": "set", "box.size_z": "fitted"}
    assert "the fit's own value kept: box.mass (set), box.size_z (fitted)" in _header(out)


def test_several_objects_the_shared_file_says_it_holds_none(runs: dict[str, Path], tmp_path: Path) -> None:
    out, report = _fit(tmp_path, [runs["steel"], runs["alu"]])
    fitted, nominal = load_params(out), ParameterSet.nominal()
    for name in (*BLOCKS["steel"], *PROBE):
        assert fitted[name] == nominal[name], name  # no block's, and the header says so
    assert ("box and pusher: no object's: the fitted trials carry 2 object(s), 'steel' (1 trial(s)), "
            "'alu' (1 trial(s)); this file holds none of their box and pusher values") in _header(out)
    record = report["params_object"]
    assert record["object"] is None and record["from_trials"] is False
    assert {o["name"]: o["params_file"] for o in record["objects"]} == {"steel": None, "alu": None}


def test_per_object_files_hold_their_objects_geometry(runs: dict[str, Path], tmp_path: Path) -> None:
    out, report = _fit(tmp_path, [runs["steel"], runs["alu"]], "--per-object", "contact.mu_table")
    assert "each object's values: fitted.alu.yaml, fitted.steel.yaml" in _header(out)
    for name, geometry in BLOCKS.items():
        per_block = tmp_path / f"fitted.{name}.yaml"
        values = load_params(per_block)
        for key, value in {**geometry, **PROBE}.items():
            assert values[key] == value, (name, key)
        assert values["contact.mu_table"] == report["values"][f"contact.mu_table[{name}]"]
        assert f"box and pusher: the trials' object '{name}', carried by its 1 trial(s)" in _header(per_block)
    assert load_params(out)["box.size_z"] == ParameterSet.nominal()["box.size_z"]
    assert {o["name"]: o["params_file"] for o in report["params_object"]["objects"]} == {
        "steel": "fitted.steel.yaml", "alu": "fitted.alu.yaml"}
