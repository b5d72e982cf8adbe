"""The project stands on its own: no source, test, benchmark or build file names a path outside the
repository, and the real data it ships is found through the package from any clone."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np

from sim2real.data import cube_toss_npz

ROOT = Path(__file__).resolve().parents[2]
#: A parent folder of the repository ("../<sibling>") or an absolute path under the developers' work tree.
OUTSIDE = re.compile(r"\.\./" + "shared" + r"|/" + "work" + r"/")
CHECKED = ("sim2real", "tests", "benchmarks", "launch", "config", "docs", "Makefile", "setup.py", "pyproject.toml",
           "mkdocs.yml", ".ci")


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z", "--", *CHECKED], cwd=ROOT, capture_output=True, check=True)
    paths = [ROOT / name for name in listed.stdout.decode().split("\0") if name]
    return [p for p in paths if p.is_file() and p.suffix not in {".npz", ".png", ".mcap", ".db3"}]


def test_no_tracked_file_names_a_path_outside_the_repository() -> None:
    files = _tracked_text_files()
    assert len(files) > 100  # the listing worked
    offenders = []
    for path in files:
        text = path.read_text(errors="replace")
        offenders += [f"{path.relative_to(ROOT)}:{n}" for n, line in enumerate(text.splitlines(), 1)
                      if OUTSIDE.search(line)]
    assert offenders == []


def test_the_real_cube_tosses_ship_with_their_licence_and_load() -> None:
    npz = cube_toss_npz()
    assert (npz.parent / "LICENSE-contact-nets-BSD-3-Clause.txt").is_file()
    assert (npz.parent / "README.md").is_file()
    with np.load(npz) as data:
        assert data["traj_lengths"].shape == (570,)
        assert data["position"].shape == (int(data["traj_lengths"].sum()), 3)
