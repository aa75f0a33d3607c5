"""Generation and scoring against the orion command run in the same test: streamed and whole
generation give `orion generate`'s text token for token; logits give `orion perplexity`'s loss;
the tokenizer gives `orion tokenize`'s ids and the chat prompt `generate --chat` runs."""
import re

import numpy as np
import pytest

import orion
from conftest import run_orion

PROMPT = "The capital of France is"


def cli_generate(model_dir, *args):
    """`orion generate`'s continuation (its stdout after the prompt, as bytes) and token count."""
    r = run_orion("generate", "-m", model_dir, *args)
    generated = int(re.search(rb"generated (\d+) tokens", r.stderr).group(1))
    return r.stdout, generated


@pytest.fixture(scope="module")
def model(qwen3):
    return orion.load(qwen3)


def test_streamed_generation_is_the_clis_token_for_token(model, qwen3):
    out, count = cli_generate(qwen3, "-p", PROMPT, "-n", "12", "--temp", "0")
    assert out.startswith(PROMPT.encode()) and out.endswith(b"\n")
    expected = out[len(PROMPT):-1].decode("utf-8", "replace")
    stream = model.generate(PROMPT, max_tokens=12, temperature=0, stream=True)
    pieces = list(stream)
    assert "".join(pieces) == expected
    assert len(stream.ids) == count
    assert model.tokenizer.decode(stream.ids) == expected
    assert len(pieces) > 1, "a stream hands its text out piece by piece"
    assert model.generate(PROMPT, max_tokens=12, temperature=0) == expected


def test_sampling_is_the_clis_with_the_same_seed(model, qwen3):
    out, _ = cli_generate(qwen3, "-p", PROMPT, "-n", "10", "--temp", "0.9", "--top-p", "0.8", "--seed", "7")
    text = model.generate(PROMPT, max_tokens=10, temperature=0.9, top_p=0.8, seed=7)
    assert text == out[len(PROMPT):-1].decode("utf-8", "replace")
    assert text != model.generate(PROMPT, max_tokens=10, temperature=0.9, top_p=0.8, seed=8)


def test_a_stop_string_ends_the_text_before_it(model):
    whole = model.generate(PROMPT, max_tokens=12, temperature=0)
    stop = whole[len(whole) // 2:len(whole) // 2 + 2]
    assert model.generate(PROMPT, max_tokens=12, temperature=0, stop=stop) == whole[:whole.index(stop)]


def test_chat_answers_as_orion_generate_chat(model, qwen3):
    out, _ = cli_generate(qwen3, "--chat", "-p", "Hello there", "-n", "8", "--temp", "0")
    rendered = model.tokenizer.apply_chat_template([{"role": "user", "content": "Hello there"}])
    assert out.startswith(rendered.encode())
    expected = out[len(rendered.encode()):-1].decode("utf-8", "replace")
    messages = [{"role": "user", "content": "Hello there"}]
    assert "".join(model.chat(messages, max_tokens=8, temperature=0, stream=True)) == expected
    answer = model.chat(messages, max_tokens=8, temperature=0)
    assert answer["role"] == "assistant" and answer["content"].strip() in expected


def test_logits_give_the_clis_perplexity(model, qwen3, tmp_path):
    text = "In the beginning God created the heaven and the earth. And the earth was without form, and void."
    (tmp_path / "t.txt").write_text(text)
    cli = __import__("json").loads(run_orion("perplexity", "-m", qwen3, "-f", tmp_path / "t.txt", "--json").stdout)
    ids = model.encode(text)
    logits = model.logits(ids)
    assert logits.shape == (len(ids), model.vocab_size) and logits.dtype == np.float32
    assert not logits.flags.owndata, "the array is a view of Orion's memory, not a copy"
    x = logits.astype(np.float64)
    peak = x.max(axis=1, keepdims=True)
    log_probs = x - peak - np.log(np.exp(x - peak).sum(axis=1, keepdims=True))
    nll = -log_probs[np.arange(len(ids) - 1), ids[1:]]
    assert cli["tokens"] == len(ids) - 1
    assert abs(nll.mean() - cli["loss"]) < 1e-6
    loss = model.loss(ids)
    assert loss.shape == (len(ids) - 1,) and np.allclose(loss, nll, rtol=0, atol=1e-9)
    assert np.array_equal(model.logits(text), logits), "a str is scored as model.encode(str)"


def test_the_tokenizer_is_the_clis(qwen3):
    tok = orion.Tokenizer.from_pretrained(qwen3)
    text = "Hello, world! Ünïcödé and 12345."
    ids = tok.encode(text)
    assert ids == [int(i) for i in run_orion("tokenize", "-m", qwen3, text).stdout.split()]
    assert tok.decode(ids) == text
    assert tok.decode(np.array(ids, dtype=np.int32)) == text
    assert tok.encode_batch([text, "two"]) == [ids, tok.encode("two")]
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    rendered = tok.apply_chat_template(messages)
    assert rendered.endswith("<|im_start|>assistant\n")
    assert tok.apply_chat_template(messages, tokenize=True) == tok.encode(rendered)
