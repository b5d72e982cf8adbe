"""The package builds as a ROS 2 ament_python package with colcon and installs its files."""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from children import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def colcon_install(tmp_path_factory):
    colcon = BIN / "colcon"
    if not colcon.exists():
        pytest.fail("colcon is not installed in the venv (make venv installs it)")
    workspace = tmp_path_factory.mktemp("ws")
    src = workspace / "src" / "sim2real"
    src.parent.mkdir()
    # A copy of the tracked sources (not the venv or build products).
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run([str(colcon), "build", "--base-paths", "src"], cwd=workspace, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return workspace / "install" / "sim2real"


def test_share_files_are_installed(colcon_install):
    share = colcon_install / "share" / "sim2real"
    assert (colcon_install / "share" / "ament_index" / "resource_index" / "packages" / "sim2real").is_file()
    assert (share / "package.xml").is_file()
    assert (share / "urdf" / "xarm6.urdf").is_file()
    for folder, patterns in (("config", ("*.yaml", "*.xml", "*.json")), ("launch", ("*.launch.py",))):
        expected = sorted(p.name for pattern in patterns for p in (ROOT / folder).glob(pattern))
        assert sorted(p.name for p in (share / folder).iterdir() if p.is_file()) == expected
    assert (share / "config" / "fastdds_loopback.xml").is_file()
    assert (share / "config" / "foxglove_layout.json").is_file()


def _console_scripts() -> list[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "CONSOLE_SCRIPTS":
            return [entry.split("=")[0].strip() for entry in ast.literal_eval(node.value)]
    raise AssertionError("setup.py has no CONSOLE_SCRIPTS list")


def test_console_scripts_are_installed(colcon_install):
    scripts = _console_scripts()
    assert "sim2real" in scripts
    for name in scripts:
        path = colcon_install / "lib" / "sim2real" / name
        assert path.is_file() and os.access(path, os.X_OK), name


def test_installed_cli_runs(colcon_install):
    site = next((colcon_install / "lib").glob("python3.*/site-packages"))
    env = {**os.environ, "PYTHONPATH": str(site), "AMENT_PREFIX_PATH": str(colcon_install)}
    script = colcon_install / "lib" / "sim2real" / "sim2real"
    result = subprocess.run([str(script), "--help"], env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert result.returncode == 0, result.stderr
    assert "params" in result.stdout
