"""What a fit writes and reads back: fit.json's typed document and its one reader (``fit_file``), the fitted params
YAML written with it (``writeback``; per object: ``fitted_objects``), and the samples directory of ``sim2real
sample`` (``sample_files``). Callers elsewhere import through this face, lazily: a module loads on the first use of
one of its names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim2real.sysid.files.fit_file import FIT_FORMAT, FitDocument, read_fit_document
    from sim2real.sysid.files.fitted_objects import trial_objects
    from sim2real.sysid.files.sample_files import (
        BAND_CALIBRATION_KEY,
        BAND_NOTE_KEY,
        SAMPLES_CSV,
        SAMPLES_SCHEMA,
        band_note,
        read_band_calibration,
        sample_file_name,
        write_samples,
    )
    from sim2real.sysid.files.writeback import (
        check_out_path,
        check_per_object_outputs,
        fit_document,
        fit_json_path,
        hard_steps_dir,
        object_params_path,
        write_fit,
    )

#: The face: each public name callers outside this subpackage use, and the module that defines it. A module is
#: imported on the first use of one of its names, so importing the subpackage loads nothing.
_FACE: dict[str, str] = {
    "BAND_CALIBRATION_KEY": "sample_files",
    "BAND_NOTE_KEY": "sample_files",
    "FIT_FORMAT": "fit_file",
    "FitDocument": "fit_file",
    "SAMPLES_CSV": "sample_files",
    "SAMPLES_SCHEMA": "sample_files",
    "band_note": "sample_files",
    "check_out_path": "writeback",
    "check_per_object_outputs": "writeback",
    "fit_document": "writeback",
    "fit_json_path": "writeback",
    "hard_steps_dir": "writeback",
    "object_params_path": "writeback",
    "read_band_calibration": "sample_files",
    "read_fit_document": "fit_file",
    "sample_file_name": "sample_files",
    "trial_objects": "fitted_objects",
    "write_fit": "writeback",
    "write_samples": "sample_files",
}
__all__ = [
    "BAND_CALIBRATION_KEY",
    "BAND_NOTE_KEY",
    "FIT_FORMAT",
    "SAMPLES_CSV",
    "SAMPLES_SCHEMA",
    "FitDocument",
    "band_note",
    "check_out_path",
    "check_per_object_outputs",
    "fit_document",
    "fit_json_path",
    "hard_steps_dir",
    "object_params_path",
    "read_band_calibration",
    "read_fit_document",
    "sample_file_name",
    "trial_objects",
    "write_fit",
    "write_samples",
]

if not TYPE_CHECKING:
    def __getattr__(name: str) -> Any:
        """``sim2real.sysid.files.NAME`` (:func:`sim2real.sysid.faces.face_attribute`)."""
        from sim2real.sysid.faces import face_attribute

        return face_attribute(__name__, _FACE, name)
