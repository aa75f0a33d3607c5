"""`pip install .` into a virtual environment, offline (no index): the in-tree backend packs the
module of the build these tests run (ORION_BUILD_DIR) into a wheel that imports and works."""
import os
import pathlib
import subprocess
import sys

import pytest

import orion
from conftest import ROOT


def test_pip_installs_the_module_offline(tiny, tmp_path):
    build = pathlib.Path(orion.__file__).resolve().parents[2]
    if not (build / "CMakeCache.txt").exists():
        pytest.skip(f"orion is imported from {build}, not from a build folder")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(ORION_BUILD_DIR=str(build), PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", str(ROOT)], env=env,
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    check = "import orion, sys; print(orion.__file__); print(orion.Tokenizer.from_pretrained(sys.argv[1]).encode('hi'))"
    r = subprocess.run([str(venv / "bin" / "python"), "-c", check, tiny], env=env, capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    where, ids = r.stdout.splitlines()
    assert where.startswith(str(venv)) and ids == str(orion.Tokenizer.from_pretrained(tiny).encode("hi"))
