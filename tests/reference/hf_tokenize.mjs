// The reference for Orion's tokenizer.json reader (tests/text/hf_tokenizer_test.cpp): Hugging
// Face's own JavaScript tokenizers (npm @huggingface/tokenizers) on the same files and texts.
// Usage: node hf_tokenize.mjs NODE_MODULES TOKENIZER_DIR TEXTS.json OUT.json
// TEXTS is a list of strings; OUT gets, for each, {"ids": encode without special tokens,
// "with_special": encode with them (the post-processor's), "text": decode(ids)}.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, dir, textsPath, outPath] = process.argv.slice(2);
const { Tokenizer } = await import(
  pathToFileURL(join(nodeModules, "@huggingface/tokenizers/dist/tokenizers.mjs")).href
);
const json = JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8"));
let config = {};
try {
  config = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"));
} catch {}
const tokenizer = new Tokenizer(json, config);
const texts = JSON.parse(readFileSync(textsPath, "utf8"));
const out = texts.map((t) => {
  const ids = tokenizer.encode(t, { add_special_tokens: false }).ids;
  const withSpecial = tokenizer.encode(t, { add_special_tokens: true }).ids;
  return { ids, with_special: withSpecial, text: tokenizer.decode(ids, { skip_special_tokens: false }) };
});
writeFileSync(outPath, JSON.stringify(out));
