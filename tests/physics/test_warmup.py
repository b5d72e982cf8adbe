"""The first use of the engine after an install says that it compiles, and what it is doing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from children import HANG_GUARD_S

from sim2real.physics import warmup


def test_an_empty_numba_cache_is_seen_as_not_compiled(tmp_path) -> None:
    probe = "from sim2real.physics.warmup import kernels_cached; print(kernels_cached())"
    empty = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)},
                           capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert empty.stdout.strip() == "False", empty.stderr[-2000:]


def test_compiling_announces_itself_stage_by_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warmup, "kernels_cached", lambda: False)
    lines: list[str] = []
    assert warmup.compile_with_progress(lines.append) is True
    assert "compiling the engine's kernels" in lines[0] and "once" in lines[0]
    assert [line.split("]")[0] for line in lines[1:3]] == ["sim2real: [1/2", "sim2real: [2/2"]
    assert lines[-1].startswith("sim2real: engine kernels compiled and cached")


def test_a_current_cache_compiles_nothing_and_says_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warmup, "kernels_cached", lambda: True)
    lines: list[str] = []
    assert warmup.compile_with_progress(lines.append) is False
    assert lines == []
