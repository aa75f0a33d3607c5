// Hugging Face's JavaScript tokenizer (npm @huggingface/tokenizers) for a folder with
// tokenizer.json and, where there is one, tokenizer_config.json: the reference hf_tokenize.mjs
// and kjv_tokens.mjs both tokenize with.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export async function loadTokenizer(nodeModules, dir) {
  const { Tokenizer } = await import(
    pathToFileURL(join(nodeModules, "@huggingface/tokenizers/dist/tokenizers.mjs")).href
  );
  const json = JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8"));
  let config = {};
  try {
    config = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"));
  } catch {}
  return new Tokenizer(json, config);
}
