"""What the module's tests share: the `orion` command they compare against (ORION_BIN, else the
build's), and the models and data they make with it, once per session: a Qwen3-shaped folder
(scripts/make_hf_folder.sh, the real tokenizer and chat template from the fetched test data), a
tiny byte-level Llama for the loops that run many times, and a chat dataset
(scripts/make_chat_dataset.py)."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def orion_bin():
    return os.environ.get("ORION_BIN") or str(ROOT / "build" / "bin" / "orion")


def run_orion(*args, check=True):
    """Runs the orion command; returns its CompletedProcess (stdout and stderr as bytes)."""
    r = subprocess.run([orion_bin(), *map(str, args)], capture_output=True)
    if check and r.returncode != 0:
        raise AssertionError(f"orion {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr.decode(errors='replace')}")
    return r


def metrics(run_dir):
    """The steps of a training run's metrics.jsonl."""
    with open(pathlib.Path(run_dir) / "metrics.jsonl") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def qwen3(tmp_path_factory):
    out = tmp_path_factory.mktemp("qwen3") / "m"
    env = dict(os.environ, ORION=orion_bin())
    if os.environ.get("ORION_TEST_DATA"):
        env["TEST_DATA"] = os.environ["ORION_TEST_DATA"]
    r = subprocess.run([str(ROOT / "scripts" / "make_hf_folder.sh"), "qwen3", str(out)], env=env, capture_output=True)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return str(out)


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny") / "m"
    run_orion("init", "--arch", "llama", "--layers", "2", "--dim", "64", "--heads", "4", "--context", "128",
              "--seed", "3", "--out", out)
    return str(out)


@pytest.fixture(scope="session")
def chat_data(tmp_path_factory):
    out = tmp_path_factory.mktemp("chat") / "data"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_chat_dataset.py"), str(out), "--records", "24"],
                   check=True, capture_output=True)
    return str(out)
