"""numba's cache of the kernels is dropped when any source the kernels are compiled from changed."""

from __future__ import annotations

from pathlib import Path

from sim2real.physics import kernel_cache
from sim2real.physics.kernel_cache import STAMP_NAME, drop_stale_cache, fingerprint, kernel_sources


def _cache_files(cache: Path) -> set[str]:
    return {p.name for p in cache.iterdir() if p.suffix in (".nbi", ".nbc")}


def test_cache_files_go_when_any_source_changes_and_stay_while_none_does(tmp_path: Path) -> None:
    sources = [tmp_path / "step.py", tmp_path / "layout.py"]
    sources[0].write_text("def step(): pass\n")
    sources[1].write_text("QUAT = 3\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    compiled = {"step.step_kernel-117.py311.nbi", "step.step_kernel-117.py311.1.nbc"}
    for name in compiled:
        (cache / name).write_bytes(b"compiled")
    (cache / "step.cpython-311.pyc").write_bytes(b"bytecode")

    assert drop_stale_cache(cache, sources)  # never checked against these sources: dropped
    assert _cache_files(cache) == set() and (cache / "step.cpython-311.pyc").exists()
    assert (cache / STAMP_NAME).read_text().strip() == fingerprint(sources)

    for name in compiled:  # compiled again from these sources
        (cache / name).write_bytes(b"compiled")
    assert not drop_stale_cache(cache, sources)
    assert _cache_files(cache) == compiled

    sources[1].write_text("QUAT = 4\n")  # another file than the cached function's own
    assert drop_stale_cache(cache, sources)
    assert _cache_files(cache) == set()


def test_a_cache_directory_that_cannot_be_written_is_left_alone(tmp_path: Path) -> None:
    source = tmp_path / "step.py"
    source.write_text("x = 1\n")
    assert not drop_stale_cache(Path("/proc/sim2real-kernels"), [source])


def test_the_package_stamp_names_the_current_sources() -> None:
    import sim2real.physics.kernels  # noqa: F401  (the import checks the cache)

    stamp = kernel_cache.KERNELS / "__pycache__" / STAMP_NAME
    assert stamp.read_text().strip() == fingerprint(kernel_sources())
    names = {p.name for p in kernel_sources()}
    assert {"step.py", "gradients.py", "common.py", "layout.py", "constants.py"} <= names
