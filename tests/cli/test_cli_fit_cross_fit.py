"""``sim2real fit --cross-fit K``: the prediction band calibrated on the fitted trials themselves, each
predicted by a fit on the other folds (issue 55: a small real set cannot spare the held-out trials a
split calibration needs)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fixtures.pushed_box import friction_push

from sim2real.cli import main
from sim2real.errors import InputError
from sim2real.sysid.prediction.cross_fit import fold_groups
from sim2real.trials import write_run_meta, write_trial

FRICTIONS = (0.36, 0.42, 0.38, 0.45, 0.4, 0.34)


def _run(path: Path, frictions: tuple[float, ...], first: int = 0) -> Path:
    """Probe pushes at 0.5, 0.53, ... m/s of boxes with these table frictions (one trial each)."""
    for k, mu in enumerate(frictions):
        write_trial(path, friction_push(f"push_{first + k}", 0.5 + 0.03 * (first + k), mu))
    write_run_meta(path, {"mode": "imported"})
    return path


def test_folds_deal_every_trial_once_and_follow_the_seed() -> None:
    names = [f"t{k}" for k in range(7)]
    groups = fold_groups(names, 3, seed=4)
    assert sorted(n for g in groups for n in g) == sorted(names)
    assert sorted(len(g) for g in groups) == [2, 2, 3]
    assert fold_groups(names, 3, seed=4) == groups
    assert fold_groups(names, 3, seed=5) != groups
    assert [len(g) for g in fold_groups(names, 7, seed=0)] == [1] * 7  # leave one out
    for folds in (1, 8):
        with pytest.raises(InputError, match=f"{folds} folds of 7 fitted trials: 2 to 7 folds"):
            fold_groups(names, folds, seed=0)


def _labelled_run(path: Path, objects: dict[str, tuple[float, ...]]) -> Path:
    """Probe pushes of boxes labelled by object (trial.json "object"), each object with its table frictions."""
    from sim2real.params import ParameterSet
    from sim2real.trials.trial_object import TrialObject

    nominal = ParameterSet.nominal()
    geometry = {name: float(nominal[name]) for name in ("box.size_x", "box.size_y", "box.size_z", "box.mass",
                                                        "pusher.radius")}
    k = 0
    for label, frictions in objects.items():
        for mu in frictions:
            record = friction_push(f"{label}_{k}", 0.5 + 0.03 * k, mu)
            record.meta["object"] = TrialObject(geometry, "sphere", label).as_dict()
            write_trial(path, record)
            k += 1
    write_run_meta(path, {"mode": "imported"})
    return path


def test_folds_of_a_per_object_fit_give_every_fold_fit_each_object() -> None:
    names = [f"a{k}" for k in range(3)] + [f"b{k}" for k in range(2)] + [f"c{k}" for k in range(4)]
    objects = {name: name[0] for name in names}
    for seed in range(5):
        groups = fold_groups(names, 2, seed, objects)
        assert sorted(n for g in groups for n in g) == sorted(names)
        for group in groups:  # the fit without this fold keeps a trial of each object
            assert {objects[n] for n in names if n not in group} == {"a", "b", "c"}
    with pytest.raises(InputError, match="needs at least 2 fitted trials of each object: d has one"):
        fold_groups([*names, "d0"], 3, 0, {**objects, "d0": "d"})


def test_a_per_object_fit_is_cross_fitted_per_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two objects with their own table friction, three pushes each, no held-out trial: three fold fits, each on
    two pushes of each object, predict the other two with that fold fit's own per-object values."""
    run = _labelled_run(tmp_path / "run", {"a": (0.36, 0.38, 0.40), "b": (0.46, 0.44, 0.48)})
    out = tmp_path / "fitted.yaml"
    code = main(["fit", str(run), "--free", "contact.mu_table", "--per-object", "contact.mu_table",
                 "--spread-draws", "4", "--cross-fit", "3", "--level", "0.8", "--out", str(out)])
    err = capsys.readouterr().err
    assert code in (0, 3), err
    document = json.loads(out.with_suffix(".json").read_text())
    cross = document["validation"]["spread"]["cross_fit"]
    assert cross["folds"] == 3 and cross["trials"] == 6
    for fold in cross["fold_fits"]:
        assert fold["status"] == "converged"
        assert sorted(fold["values"]) == ["contact.mu_table[a]", "contact.mu_table[b]"]
        assert {name[0] for name in fold["held_out"]} == {"a", "b"}  # one of each object per fold
    full = document["values"]
    assert full["contact.mu_table[a]"] < full["contact.mu_table[b]"]
    assert document["validation"]["spread"]["calibration"]["trials"] == 6


def test_a_per_object_cross_fit_with_an_object_of_one_trial_is_refused_before_any_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _labelled_run(tmp_path / "run", {"a": (0.36, 0.38), "b": (0.45,)})
    out = tmp_path / "fitted.yaml"
    assert main(["fit", str(run), "--free", "contact.mu_table", "--per-object", "contact.mu_table",
                 "--spread-draws", "4", "--cross-fit", "2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "--cross-fit with --per-object needs at least 2 trials to fit of each " \
        "object: b has one" in err, err
    assert not out.exists() and not out.with_suffix(".json").exists()
    assert "iteration" not in err  # refused before the fit


def test_cross_fit_calibrates_on_every_fitted_trial_predicted_without_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Six pushes, no held-out trial: three fold fits of four pushes each predict the other two. The band is
    calibrated on all six (80 %: rank 6 of 6), each fold fit's values are its own, and replay uses the
    calibration for a new push."""
    run = _run(tmp_path / "run", FRICTIONS)
    out = tmp_path / "fitted.yaml"
    code = main(["fit", str(run), "--free", "contact.mu_table", "--spread-draws", "4", "--cross-fit", "3",
                 "--level", "0.8", "--out", str(out)])
    err = capsys.readouterr().err
    document = json.loads(out.with_suffix(".json").read_text())
    assert code in (0, 3), err
    spread = document["validation"]["spread"]
    cross = spread["cross_fit"]
    assert cross["folds"] == 3 and cross["trials"] == 6
    held = [name for fold in cross["fold_fits"] for name in fold["held_out"]]
    assert sorted(held) == [f"push_{k}" for k in range(6)]
    assert sorted(t["trial"] for t in spread["trials"]) == sorted(held)
    assert spread["calibration"]["trials"] == 6 and spread["calibrated"] is True
    assert spread["check"]["judged"] == 6
    # A fold fit saw four of the six pushes: its friction is not the full fit's.
    full = document["values"]["contact.mu_table"]
    values = [fold["values"]["contact.mu_table"] for fold in cross["fold_fits"]]
    assert all(fold["status"] == "converged" for fold in cross["fold_fits"])
    assert all(abs(v - full) > 1e-6 for v in values), (full, values)
    assert "6 fitted trial(s) predicted by 3 fold fits without them" in spread["summary"]
    assert "fit: cross-fit: fold 3/3: fitted without " in err

    new = _run(tmp_path / "new", (0.41,), first=6)
    assert main(["replay", str(new), "--spread", str(out.with_suffix(".json")), "--draws", "4", "--level", "0.8",
                 "--out", str(tmp_path / "replayed")]) in (0, 3)
    replayed = json.loads((tmp_path / "replayed" / "spread.json").read_text())
    assert replayed["calibrated"] is True and replayed["calibration"]["trials"] == 6
    assert main(["report", str(tmp_path / "replayed"), "--out", str(tmp_path / "report")]) == 0
    text = " ".join((tmp_path / "report" / "report.md").read_text().split())
    assert "τ the model's discrepancy estimated on 6 trial(s) each predicted by a fit that did not see it" in text


def test_cross_fit_pools_the_held_out_trials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path / "run", FRICTIONS[:4])
    held = _run(tmp_path / "held", FRICTIONS[4:], first=4)
    out = tmp_path / "fitted.yaml"
    main(["fit", str(run), "--free", "contact.mu_table", "--validate", str(held), "--spread-draws", "4",
          "--cross-fit", "2", "--level", "0.8", "--out", str(out)])
    capsys.readouterr()
    spread = json.loads(out.with_suffix(".json").read_text())["validation"]["spread"]
    assert spread["calibration"]["trials"] == 6 and spread["cross_fit"]["trials"] == 4
    assert {t["trial"] for t in spread["trials"]} == {f"push_{k}" for k in range(6)}
    assert "and 2 held-out trial(s)" in spread["summary"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--cross-fit", "3"], "--cross-fit calibrates the prediction band: it needs --spread-draws N"),
    (["--cross-fit", "1", "--spread-draws", "4"], "argument --cross-fit: must be in [2, 100000], got 1"),
    (["--cross-fit", "3", "--spread-draws", "4"], "--cross-fit 3: there are 2 trial(s) to fit, and a fold needs one"),
])
def test_bad_cross_fit_options_are_one_line_before_any_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str) -> None:
    run = _run(tmp_path / "run", FRICTIONS[:2])
    out = tmp_path / "fitted.yaml"
    try:
        code = main(["fit", str(run), "--free", "contact.mu_table", *extra, "--out", str(out)])
    except SystemExit as exit_:  # argparse's own check
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert not out.exists() and not out.with_suffix(".json").exists()



def test_replay_draws_as_the_band_was_calibrated_and_warns_when_told_otherwise(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A band calibrated on draws with a given start noise is applied to draws with the same noise and count
    unless the replay is told otherwise; other draws are warned about (the discrepancy was measured beyond
    the calibration's draws)."""
    run = _run(tmp_path / "run", FRICTIONS)
    out = tmp_path / "fitted.yaml"
    main(["fit", str(run), "--free", "contact.mu_table", "--spread-draws", "5", "--cross-fit", "3",
          "--start-noise", "0.5,0.3", "--level", "0.8", "--out", str(out)])
    new = _run(tmp_path / "new", (0.41,), first=6)
    fit_json = str(out.with_suffix(".json"))
    capsys.readouterr()
    assert main(["replay", str(new), "--spread", fit_json, "--level", "0.8", "--out", str(tmp_path / "a")]) in (0, 3)
    same = json.loads((tmp_path / "a" / "spread.json").read_text())
    assert same["draws"] == 5 and same["start_noise"] == {"measured": False, "position_mm": 0.5, "yaw_deg": 0.3}
    assert "WARNING: the band was calibrated with" not in capsys.readouterr().err
    main(["replay", str(new), "--spread", fit_json, "--start-noise", "auto", "--level", "0.8",
          "--out", str(tmp_path / "b")])
    assert ("WARNING: the band was calibrated with --start-noise 0.5,0.3; these draws use auto"
            in capsys.readouterr().err)


def test_a_fold_whose_fit_fails_is_a_warning_and_the_others_stand(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import sim2real.sysid as sysid

    real = sysid.fit_trials
    calls: list[int] = []

    def failing_first_fold(problem: object, *args: object, **kwargs: object) -> object:
        if kwargs.get("starts") == 1:  # a fold fit (the full fit takes the default starts)
            calls.append(1)
            if len(calls) == 1:
                raise InputError("made to fail here")
        return real(problem, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sysid, "fit_trials", failing_first_fold)
    run = _run(tmp_path / "run", FRICTIONS)
    out = tmp_path / "fitted.yaml"
    code = main(["fit", str(run), "--free", "contact.mu_table", "--spread-draws", "4", "--cross-fit", "3",
                 "--level", "0.75", "--out", str(out)])
    err = capsys.readouterr().err
    document = json.loads(out.with_suffix(".json").read_text())
    cross = document["validation"]["spread"]["cross_fit"]
    assert [fold["status"] for fold in cross["fold_fits"]] == ["failed", "converged", "converged"], cross
    assert cross["trials"] == 4 and document["validation"]["spread"]["calibration"]["trials"] == 4
    assert any(w.startswith("--cross-fit: fold 1's fit (without ") and "made to fail here" in w
               and w.endswith("its trials are not predicted") for w in document["warnings"]), document["warnings"]
    assert "fit: cross-fit: fold 1/3 (" in err and "its fit failed: made to fail here" in err
    assert code in (0, 3)


def test_a_per_object_fit_is_sampled_one_object_at_a_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``sample`` of a per-object fit used to refuse it: with ``--object`` it draws that object's parameter sets
    (its own friction under the registry name) on that object's params file."""
    from sim2real.params import load_params

    run = _labelled_run(tmp_path / "run", {"a": (0.36, 0.38, 0.40), "b": (0.46, 0.44, 0.48)})
    out = tmp_path / "fitted.yaml"
    assert main(["fit", str(run), "--free", "contact.mu_table", "--per-object", "contact.mu_table",
                 "--out", str(out)]) in (0, 3)
    values = json.loads(out.with_suffix(".json").read_text())["values"]
    capsys.readouterr()
    assert main(["sample", str(out.with_suffix(".json")), "-n", "20", "--seed", "1", "--out", str(tmp_path / "s")]) == 2
    assert "per-object parameters (objects a, b); a sample is one object's parameter sets: give --object NAME" in \
        capsys.readouterr().err
    assert main(["sample", str(out.with_suffix(".json")), "-n", "20", "--object", "c", "--out",
                 str(tmp_path / "s")]) == 2
    assert "no object 'c' in the fit (its objects: a, b)" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
    for obj in ("a", "b"):
        target = tmp_path / f"s_{obj}"
        assert main(["sample", str(out.with_suffix(".json")), "-n", "20", "--seed", "1", "--object", obj, "--out",
                     str(target)]) == 0, capsys.readouterr().err
        drawn = [load_params(p)["contact.mu_table"] for p in sorted(target.glob("sample_*.yaml"))]
        assert len(drawn) == 20
        assert abs(float(np.mean(drawn)) - values[f"contact.mu_table[{obj}]"]) < 0.02, (obj, drawn)
        description = json.loads((target / "samples.json").read_text())
        assert description["object"] == obj and description["names"] == ["contact.mu_table"]
