"""One fit over three flat blocks (steel, aluminium, plastic): each trial simulates its own block, the
table friction is fitted per block and the probe's friction is shared; each block's hidden value is found.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures import planar_pushes as pushes

from sim2real.cli import main
from sim2real.params import ParameterSet, load_params
from sim2real.trials.trial_object import TrialObject

#: Block geometry (m, kg) and each block's hidden table friction.
BLOCKS = {
    "steel": ({"box.size_x": 0.099, "box.size_y": 0.099, "box.size_z": 0.0095, "box.mass": 0.73}, 0.20),
    "alu": ({"box.size_x": 0.116, "box.size_y": 0.116, "box.size_z": 0.0127, "box.mass": 0.46}, 0.35),
    "plastic": ({"box.size_x": 0.122, "box.size_y": 0.122, "box.size_z": 0.051, "box.mass": 0.80}, 0.50),
}
PROBE = {"pusher.radius": 0.005, "pusher.length": 0.10}
SHARED = {"contact.mu_pusher": 0.45, "contact.support_ratio": 0.6}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("blocks")
    for k, (name, (geometry, mu_table)) in enumerate(BLOCKS.items()):
        truth = ParameterSet.nominal().replace({**geometry, **PROBE, **SHARED, "contact.mu_table": mu_table})
        obj = TrialObject({**geometry, "pusher.radius": PROBE["pusher.radius"],
                           "pusher.length": PROBE["pusher.length"]}, "rod", name)
        pushes.write_pushes(root, pushes.TRAINING[:3], truth, noise_m=2e-4, noise_rad=3e-3, seed=k, obj=obj,
                            prefix=name)
    return root


@pytest.mark.slow
def test_per_object_and_shared_parameters_recover_each_blocks_values(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "blocks.yaml"
    code = main(["fit", str(run), "--free", "contact.mu_table,contact.mu_pusher", "--per-object", "contact.mu_table",
                 "--set", "contact.support_ratio=0.6", "--horizon", "trial", "--max-iterations", "40",
                 "--out", str(out)])
    report = json.loads(out.with_suffix(".json").read_text())
    assert code == 0, report["problems"]
    for name, (_, mu_table) in BLOCKS.items():
        assert report["values"][f"contact.mu_table[{name}]"] == pytest.approx(mu_table, rel=0.05), name
        per_block = load_params(tmp_path / f"blocks.{name}.yaml")
        assert per_block["contact.mu_table"] == pytest.approx(report["values"][f"contact.mu_table[{name}]"])
    assert report["values"]["contact.mu_pusher"] == pytest.approx(SHARED["contact.mu_pusher"], rel=0.05)
    assert report["data"]["objects"]["objects"] == ["alu", "plastic", "steel"]
    assert load_params(out)["contact.mu_table"] == 0.5  # the shared file keeps the start's value, not a block's


def test_per_object_names_must_be_free_and_trials_labelled(run: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "blocks.yaml"
    assert main(["fit", str(run), "--free", "contact.mu_pusher", "--per-object", "contact.mu_table",
                 "--out", str(out)]) == 2
    assert "--per-object: the per-object parameters name contact.mu_table, which is not free" in capsys.readouterr().err
    assert not out.exists()


def test_a_per_object_fit_predicts_each_trial_as_a_spread_with_its_own_objects_values(
        run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``replay --spread`` of a per-object fit used to stop at ``unknown parameter 'contact.mu_table[alu]'``."""
    from sim2real.sysid.files.fit_file import FitDocument
    from sim2real.sysid.prediction.spread import trial_values

    labels = ("contact.mu_table[alu]", "contact.mu_table[plastic]", "contact.mu_table[steel]", "contact.mu_pusher")
    values = {label: mu for label, mu in zip(labels, (0.35, 0.5, 0.2, 0.45), strict=True)}
    document = {"status": "converged", "problems": [], "values": values, "start_values": values,
                "std": dict.fromkeys(labels, 0.01), "ci95": {}, "tied": [], "trace": [],
                "correlation": {"names": list(labels), "matrix": [[float(i == j) for j in range(4)] for i in range(4)]}}
    fit = tmp_path / "blocks.json"
    fit.write_text(json.dumps(document))
    out = tmp_path / "spread"
    trials = [str(p) for p in sorted(run.iterdir()) if p.is_dir() and p.name.endswith("_00")]
    assert main(["replay", *trials, "--spread", str(fit), "--draws", "3", "--set", "contact.support_ratio=0.6",
                 "--out", str(out)]) == 3  # written; the band is not calibrated
    spread = json.loads((out / "spread.json").read_text())
    assert spread["judged"] == 3 and all(t["failed_draws"] == 0 for t in spread["trials"])
    row = [0.35, 0.5, 0.2, 0.45]
    unknowns = FitDocument.from_json(document, "blocks").unknowns
    assert trial_values(unknowns, row, "steel") == {"contact.mu_table": 0.2, "contact.mu_pusher": 0.45}
    assert trial_values(unknowns, row, None) == {"contact.mu_pusher": 0.45}
