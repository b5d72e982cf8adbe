"""`pip install .` gets what sim2real needs: the runtime dependencies in the package metadata
(ranges that hold the pinned set of requirements.txt), and the share files (config, scenarios,
urdf, launch) installed under ``<prefix>/share/sim2real`` where :func:`sim2real.paths.share_dir`
finds them. The wheel is built once (``pip wheel --no-deps``) and installed into a prefix, offline."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from children import HANG_GUARD_S
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
#: What the installed package must carry: the source files setup.py's data_files pick up.
SHARE_PATTERNS = ("package.xml", "config/*.yaml", "config/*.xml", "config/*.json", "config/scenarios/*.yaml",
                  "urdf/*.urdf", "launch/*.launch.py")


def _install_requires() -> list[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "INSTALL_REQUIRES":
            return list(ast.literal_eval(node.value))
    raise AssertionError("setup.py has no INSTALL_REQUIRES list")


def _pins(name: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            assert spec.operator == "==", f"{name}: {line} is not pinned"
            pins[canonicalize_name(requirement.name)] = spec.version
    return pins


def test_metadata_declares_every_runtime_requirement_and_the_pins_satisfy_it() -> None:
    declared = {canonicalize_name(Requirement(r).name): Requirement(r) for r in _install_requires()}
    pins = _pins("requirements.txt")
    assert set(declared) == set(pins)
    for name, requirement in declared.items():
        assert requirement.specifier.contains(pins[name]), f"{name}=={pins[name]} is outside {requirement}"
        assert any(s.operator == "<" for s in requirement.specifier), f"{requirement} has no upper bound"
    tools = set(_pins("requirements-dev.txt")) - set(pins)
    assert {"pytest", "ruff", "colcon-core", "mujoco"} <= tools and not tools & set(declared)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of a copy of the tracked sources (nothing is built inside the checkout)."""
    src = tmp_path_factory.mktemp("src")
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if not name.startswith(("tests/", "benchmarks/")) and (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                             "-q", "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (path,) = out.glob("sim2real-*.whl")
    return path


def test_wheel_carries_the_share_files_and_the_requirements(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [line.split(":", 1)[1].strip() for line in archive.read(metadata).decode().splitlines()
                    if line.startswith("Requires-Dist:")]
    prefix = re.compile(r"^sim2real-[^/]+\.data/data/share/sim2real/")
    shared = sorted(prefix.sub("", n) for n in names if prefix.match(n))
    expected = sorted(str(p.relative_to(ROOT)) for pattern in SHARE_PATTERNS for p in ROOT.glob(pattern))
    assert shared == expected
    assert "config/scenarios/slide.yaml" in shared and "config/experiment.yaml" in shared
    runtime = [Requirement(r) for r in requires if "extra ==" not in r]  # the `test` and `ray` extras aside
    assert {canonicalize_name(r.name) for r in runtime} == set(_pins("requirements.txt"))
    # the optional Ray of `--executor ray`: the extra's range holds the version the tests run
    (ray,) = [Requirement(r) for r in requires if 'extra == "ray"' in r]
    assert ray.name == "ray" and ray.specifier.contains(_pins("requirements-dev.txt")["ray"])


def test_installed_package_finds_its_share_files(wheel: Path, tmp_path: Path) -> None:
    """``pip install --prefix``: no AMENT_PREFIX_PATH, no checkout; the experiment, URDF and
    scenario files are found under the prefix (through the distribution's file list)."""
    prefix = tmp_path / "prefix"
    # --ignore-installed: without it pip first uninstalls the sim2real of the running environment
    # (the developer's editable install), since --prefix does not isolate what pip considers installed
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed",
                             "-q", "--prefix", str(prefix), str(wheel)], capture_output=True, text=True,
                            timeout=HANG_GUARD_S)
    assert result.returncode == 0, result.stderr[-3000:]
    still = subprocess.run([str(BIN / "python"), "-c", "import sim2real"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=HANG_GUARD_S)
    assert still.returncode == 0, "the install into a prefix removed the running environment's sim2real"
    (site,) = prefix.glob("lib/python3.*/site-packages")
    assert (prefix / "bin" / "sim2real").is_file()  # console scripts go to bin/ (setup.cfg's lib/ is colcon's)
    probe = ("import sim2real, sim2real.paths as p\n"
             "from sim2real.control.reference import load_experiment_config\n"
             "from sim2real.model import load_arm\n"
             "print(sim2real.__file__); print(p.share_dir()); print(load_experiment_config().distances)\n"
             "print(len(load_arm().joints)); print(p.config_file('scenarios/slide.yaml').is_file())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("AMENT_PREFIX_PATH", "PYTHONPATH")}
    env["PYTHONPATH"] = str(site)
    result = subprocess.run([str(BIN / "python"), "-c", probe], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=HANG_GUARD_S)
    assert result.returncode == 0, result.stderr[-3000:]
    module, share, distances, joints, scenario = result.stdout.split("\n")[:5]
    assert Path(module).is_relative_to(site)
    assert Path(share) == prefix / "share" / "sim2real"
    assert distances.startswith(("[0.3", "(0.3")) and joints == "6" and scenario == "True"
