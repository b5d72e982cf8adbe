"""fit.json has one format tag and one reader: report, sample and replay --spread read it alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim2real.errors import Sim2RealError
from sim2real.report import read_fit
from sim2real.sysid.fit_file import FIT_FORMAT, read_fit_document
from sim2real.sysid.sampling import read_fit_distribution

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
        assert read_fit_document(path)["values"] == FIT["values"]
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
