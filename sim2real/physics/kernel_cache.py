"""numba's on-disk cache of the engine's kernels, kept in step with all of their sources.

numba checks a cached function against its own source file only. A kernel calls functions of
other kernel modules and reads constants of :mod:`sim2real.physics.layout` and
:mod:`sim2real.physics.constants`, all frozen into its compiled code; after an edit of one of
those, numba would load the other modules' cached kernels as they were compiled, silently
computing with the old code. So the kernels' package records one fingerprint (SHA-256) of every
source the kernels are compiled from beside numba's cache files, and when it differs at import,
drops those cache files first (the kernels are then compiled again on first use, with the
progress lines of :func:`~sim2real.physics.warmup.compile_with_progress`).

When the cache directory cannot be written (an installation read-only to this user), nothing is
done here: numba then keeps its cache elsewhere, and only a new installation changes the sources.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

PHYSICS = Path(__file__).resolve().parent
KERNELS = PHYSICS / "kernels"
#: The file holding the fingerprint of the sources the cached kernels were compiled from.
STAMP_NAME = "sim2real-sources.sha256"
#: numba's cache files: an index per function and the compiled code of each of its signatures.
CACHE_PATTERNS = ("*.nbi", "*.nbc")


def kernel_sources() -> list[Path]:
    """Every file the compiled kernels depend on: the kernel modules, the θ layout and the constants."""
    return [*sorted(KERNELS.glob("*.py")), PHYSICS / "layout.py", PHYSICS / "constants.py"]


def fingerprint(sources: Sequence[Path]) -> str:
    """SHA-256 (hex) of the files' names and contents, in the given order."""
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def drop_stale_cache(cache_dir: Path = KERNELS / "__pycache__", sources: Sequence[Path] | None = None) -> bool:
    """Remove numba's cache files in ``cache_dir`` when they were written for other sources.

    Parameters
    ----------
    cache_dir : Path
        numba's cache directory of the kernels (``__pycache__`` beside them).
    sources : sequence of Path, optional
        The files the kernels are compiled from (default :func:`kernel_sources`).

    Returns
    -------
    bool
        True when cache files were removed; False when they are current, there are none, or the
        directory cannot be written.
    """
    current = fingerprint(kernel_sources() if sources is None else sources)
    stamp = cache_dir / STAMP_NAME
    try:
        if stamp.read_text().strip() == current:
            return False
    except OSError:
        pass  # no stamp yet: whatever cache is there was not checked against these sources
    try:
        stale = [path for pattern in CACHE_PATTERNS for path in cache_dir.glob(pattern)]
        for path in stale:
            path.unlink(missing_ok=True)
        cache_dir.mkdir(exist_ok=True)
        partial = stamp.with_name(f"{STAMP_NAME}.{os.getpid()}.tmp")
        partial.write_text(current + "\n")
        partial.replace(stamp)
    except OSError:
        return False
    return bool(stale)
