"""fit.json has one format tag and one reader: report, sample and replay --spread read it alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim2real.errors import DataError, Sim2RealError
from sim2real.report import read_fit
from sim2real.sysid.files.fit_file import FIT_FORMAT, FitDocument, read_fit_document
from sim2real.sysid.prediction.sampling import read_fit_distribution

FIT = {"status": "converged", "problems": [], "values": {"contact.mu_table": 0.42},
       "start_values": {"contact.mu_table": 0.5}, "std": {"contact.mu_table": 0.01},
       "ci95": {"contact.mu_table": [0.40, 0.44]},
       "correlation": {"names": ["contact.mu_table"], "matrix": [[1.0]]},
       "trace": [{"iteration": 0, "cost": 1.0}]}


def _write(tmp_path: Path, **extra: object) -> Path:
    path = tmp_path / "fit.json"
    path.write_text(json.dumps({**FIT, **extra}))
    return path


def test_the_tagged_and_the_older_untagged_fit_json_are_read_by_every_reader(tmp_path: Path) -> None:
    for extra in ({"format": FIT_FORMAT}, {}):
        path = _write(tmp_path, **extra)
        assert read_fit_document(path).values == FIT["values"]
        assert read_fit(path).values == FIT["values"]
        assert read_fit_distribution(path).mean.tolist() == [0.42]


@pytest.mark.parametrize(("tag", "message"), [("sim2real.fit/2", "newer than this sim2real reads"),
                                              ("sim2real.spread/1", "not a fit report")])
def test_another_format_is_refused_by_every_reader_in_one_line(tmp_path: Path, tag: str, message: str) -> None:
    path = _write(tmp_path, format=tag)
    for reader in (read_fit_document, read_fit, read_fit_distribution):
        with pytest.raises(Sim2RealError, match=message) as caught:
            reader(path)
        assert "\n" not in str(caught.value)


def test_a_fit_writes_its_format_first(tmp_path: Path) -> None:
    from fixtures.pushed_box import pusher_record

    from sim2real.cli import main
    from sim2real.trials import write_run_meta, write_trial

    run = tmp_path / "run"
    write_run_meta(run, {"mode": "import"})
    write_trial(run, pusher_record("probe"))
    assert main(["fit", str(run), "--free", "contact.mu_table", "--max-iterations", "2",
                 "--out", str(tmp_path / "fit.yaml")]) in (0, 3)
    document = json.loads((tmp_path / "fit.json").read_text())
    assert next(iter(document)) == "format" and document["format"] == FIT_FORMAT


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("values", {"contact.mu_table": "0.42"}, "'values' must be an object of parameter names to numbers"),
    ("std", [0.01], "'std' must be an object of parameter names to numbers or null"),
    ("ci95", {"contact.mu_table": [0.4]}, "'ci95' must be an object of parameter names to [low, high] or null"),
    ("correlation", {"names": ["contact.mu_table"], "matrix": "1"}, "'correlation' must be an object with 'names'"),
    ("dropped_rows", -1, "'dropped_rows' must be a count"),
    ("problems", "none", "'problems' must be a list of strings"),
])
def test_a_field_of_the_wrong_type_is_refused_naming_it(tmp_path: Path, field: str, value: object,
                                                                         expected: str) -> None:
    path = _write(tmp_path, **{field: value})
    readers = [read_fit_document, read_fit_distribution] + ([read_fit] if field == "values" else [])
    for reader in readers:
        with pytest.raises(DataError) as caught:
            reader(path)
        assert expected in str(caught.value) and str(path) in str(caught.value) and "\n" not in str(caught.value)
    if field != "values":  # the report shows what it can and lists the field as missing
        assert field in read_fit(path).missing


def test_the_document_of_a_file_is_written_back_as_it_was_read(tmp_path: Path) -> None:
    path = _write(tmp_path, format=FIT_FORMAT, versions={"sim2real": "x"}, tied=[], bounds={"contact.mu_table": [0, 2]})
    document = read_fit_document(path)
    again = FitDocument.from_json(document.to_json(), "again")
    assert again == document
    written = document.to_json()
    assert written["versions"] == {"sim2real": "x"} and written["bounds"] == {"contact.mu_table": [0.0, 2.0]}


def test_an_interval_with_an_end_not_known_is_read_as_no_interval(tmp_path: Path) -> None:
    """A fit whose interval came out non-finite writes it as [null, null]: read as no interval, not refused (the
    fit's own document is read back by the same reader when it is written)."""
    path = _write(tmp_path, ci95={"contact.mu_table": [None, None]})
    assert read_fit_document(path).ci95 == {"contact.mu_table": None}
    assert read_fit(path).ci95 == {}


def test_a_result_field_its_reader_would_refuse_is_left_out_with_a_warning_not_the_fit_lost() -> None:
    import dataclasses

    from fixtures.pushed_box import NOMINAL, pusher_record

    from sim2real.sysid import FitProblem, LMSettings, ResidualSpec, fit_trials

    result = fit_trials(FitProblem([pusher_record("probe")], NOMINAL, "contact.mu_table",
                                   spec=ResidualSpec(horizon=1)), settings=LMSettings(max_iterations=2))
    broken = dataclasses.replace(result, trace="not a list")  # type: ignore[arg-type]
    document = broken.document()
    assert document.values == result.values and document.trace == ()
    assert any("trace left out" in w for w in document.warnings)
