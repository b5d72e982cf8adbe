"""``sim2real compare-engines`` end to end: both engines fitted on the same pushes, compared on held-out ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures import planar_pushes as pushes

from sim2real.cli import main

pytest.importorskip("mujoco")

SMOOTH = {"mujoco.impedance_min": 0.01, "mujoco.impedance_width": 0.002}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    truth = pushes.params({"contact.mu_table": 0.25, "contact.mu_pusher": 0.45, "contact.support_ratio": 0.6})
    chosen = pushes.TRAINING[:3] + pushes.HELD_OUT[:2]
    return pushes.write_pushes(tmp_path_factory.mktemp("cmp") / "run", chosen, truth, 3e-4, 5e-3, seed=0)


def _sets() -> list[str]:
    return [f"--set={k}={v}" for k, v in {**pushes.GEOMETRY, **SMOOTH}.items()]


@pytest.mark.slow
def test_compare_engines_fits_both_and_writes_one_table_and_one_figure(
        run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cmp"
    code = main(["compare-engines", str(run), *_sets(), "--free-ours",
                 "contact.mu_table,contact.mu_pusher,contact.support_ratio", "--pusher-shape", "rod",
                 "--validate", str(run / "push_03"), "--validate", str(run / "push_04"), "--max-iterations", "12",
                 "--out", str(out)])
    document = json.loads((out / "comparison.json").read_text())
    assert code == (3 if document["problems"] else 0)
    assert [row["engine"] for row in document["engines"]] == ["ours", "mujoco"]
    assert document["held_out"] == ["push_03", "push_04"]
    for row in document["engines"]:
        after = row["held_out_final"]
        assert after["trials"] == 2 and after["final_position_m"] >= 0.0 and after["trajectory_rms_m"] >= 0.0
        assert row["fit_wall_s"] > 0.0
    ours = document["engines"][0]
    assert ours["held_out_final"]["final_position_m"] < ours["held_out_start"]["final_position_m"]
    assert (out / "comparison.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (out / "comparison.md").read_text()
    assert "| ours |" in table and "| mujoco |" in table
    for engine in ("ours", "mujoco"):
        fit = json.loads((out / f"fit_{engine}.json").read_text())
        assert fit["data"]["engine"] == engine
    assert "| ours |" in capsys.readouterr().out


def test_without_held_out_trials_nothing_is_written(run: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cmp"
    assert main(["compare-engines", str(run), *_sets(), "--out", str(out)]) == 2
    assert "no held-out trials" in capsys.readouterr().err and not out.exists()


def test_a_non_empty_output_directory_is_refused(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cmp").mkdir()
    (tmp_path / "cmp" / "mine.txt").write_text("keep")
    assert main(["compare-engines", str(run), "--holdout", "0.4", "--out", str(tmp_path / "cmp")]) == 2
    assert "not an empty directory" in capsys.readouterr().err
    assert (tmp_path / "cmp" / "mine.txt").read_text() == "keep"
