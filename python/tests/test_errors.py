"""Bad input raises orion.Error (a bad argument orion.ArgumentError, also a ValueError) with the
message the orion command prints, never a crash."""
import pytest

import orion
from conftest import run_orion


def test_a_bad_path_is_the_clis_error(tmp_path):
    missing = str(tmp_path / "no-such-model")
    with pytest.raises(orion.Error) as e:
        orion.load(missing)
    assert missing in str(e.value)
    cli = run_orion("generate", "-m", missing, "-p", "x", check=False)
    assert cli.returncode == 1
    assert cli.stderr.decode().strip() == f"orion: error: {e.value}"
    with pytest.raises(orion.Error, match="no-such-model"):
        orion.Tokenizer.from_pretrained(missing)


def test_a_bad_dtype_names_it_and_the_choices(tiny):
    with pytest.raises(orion.ArgumentError, match=r"unknown weight dtype 'f8' \(f32, f16, q8 or q4\)") as e:
        orion.load(tiny, weights="f8")
    assert isinstance(e.value, ValueError) and isinstance(e.value, orion.Error)
    with pytest.raises(orion.ArgumentError, match="unknown device 'gpu'"):
        orion.load(tiny, device="gpu")


@pytest.mark.parametrize("messages, says", [
    ("Hello", "messages must be a list"),
    ([{"role": "robot", "content": "Hi"}], "robot"),
    ([{"content": "Hi"}], "role"),
    ([{"role": "user", "content": 3}], "content"),
    ([], "empty"),
])
def test_a_malformed_message_list_says_what_is_wrong(qwen3_model, messages, says):
    with pytest.raises(orion.ArgumentError, match=says):
        qwen3_model.chat(messages, max_tokens=1)
    with pytest.raises(orion.ArgumentError, match=says):
        qwen3_model.tokenizer.apply_chat_template(messages)


def test_bad_ids_and_options(tiny):
    model = orion.load(tiny)
    with pytest.raises(orion.ArgumentError, match=r"ids\[1\] is 'a', not an int"):
        model.logits([1, "a"])
    with pytest.raises(orion.Error, match="vocab"):
        model.logits([1, 10**6])
    with pytest.raises(orion.ArgumentError, match="top-p|top_p"):
        model.generate("x", top_p=1.5)
    with pytest.raises(orion.Error, match="context"):
        model.generate("x" * 400)
    with pytest.raises(orion.Error, match="chat template"):
        model.chat([{"role": "user", "content": "Hi"}])


@pytest.fixture(scope="module")
def qwen3_model(qwen3):
    return orion.load(qwen3)
