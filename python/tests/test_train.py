"""orion.train against `orion train` with the same options on a Qwen3-shaped folder and JSONL
chat data: the callback sees the CLI's losses, and Ctrl-C leaves a checkpoint that `orion train
--resume` continues to the uninterrupted run's losses."""
import os
import signal

import pytest

import orion
from conftest import metrics, run_orion

STEPS = 4
OPTIONS = dict(lora=4, batch=2, seq=64, lr=1e-2, threads=2, mask_prompt=True)
CLI_OPTIONS = ["--lora", "4", "--batch", "2", "--seq", "64", "--lr", "1e-2", "--threads", "2", "--mask-prompt"]


@pytest.fixture(scope="module")
def cli_run(qwen3, chat_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "run"
    run_orion("train", "-m", qwen3, "--data", chat_data, "--steps", STEPS, *CLI_OPTIONS, "--out", out)
    return [m["loss"] for m in metrics(out)]


def test_the_callback_sees_the_clis_losses(qwen3, chat_data, cli_run, tmp_path):
    seen = []
    result = orion.train(qwen3, data=chat_data, out=str(tmp_path / "run"), steps=STEPS, on_step=seen.append, **OPTIONS)
    assert [s.step for s in seen] == list(range(1, STEPS + 1))
    assert [s.loss for s in seen] == pytest.approx(cli_run, rel=1e-12, abs=0)
    assert all(s.tokens_per_s > 0 and s.peak_mb > 0 and s.resident_mb > 0 for s in seen)
    assert seen[-1].val_loss is not None
    assert result["steps"] == STEPS and result["last_loss"] == seen[-1].loss
    assert os.path.isdir(result["final_checkpoint"])


def test_ctrl_c_leaves_a_checkpoint_that_resume_continues(qwen3, chat_data, cli_run, tmp_path):
    out = tmp_path / "run"

    def interrupt(step):
        if step.step == 2:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        orion.train(qwen3, data=chat_data, out=str(out), steps=STEPS, on_step=interrupt, **OPTIONS)
    assert sorted(p.name for p in out.glob("step-*")) == ["step-00000002"]
    r = run_orion("train", "-m", qwen3, "--data", chat_data, "--steps", STEPS, *CLI_OPTIONS, "--out", out, "--resume")
    assert b"resumed from step 2" in r.stderr
    assert [m["loss"] for m in metrics(out)] == pytest.approx(cli_run, rel=1e-12, abs=0)


def test_bad_training_options(qwen3, chat_data, tmp_path):
    with pytest.raises(orion.ArgumentError, match="precision f32 is not available"):
        orion.train(qwen3, data=chat_data, out=str(tmp_path / "r"), steps=1, device="ane-sim", precision="f32")
    with pytest.raises(orion.Error, match="no-such-data"):
        orion.train(qwen3, data=str(tmp_path / "no-such-data"), out=str(tmp_path / "r"), steps=1)
