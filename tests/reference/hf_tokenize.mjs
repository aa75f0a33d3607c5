// The reference for Orion's tokenizer.json reader (tests/text/hf_tokenizer_test.cpp): Hugging
// Face's own JavaScript tokenizers (npm @huggingface/tokenizers) on the same files and texts.
// Usage: node hf_tokenize.mjs NODE_MODULES TOKENIZER_DIR TEXTS.json OUT.json
// TEXTS is a list of strings; OUT gets, for each, {"ids": encode without special tokens,
// "with_special": encode with them (the post-processor's), "text": decode(ids)}.
import { readFileSync, writeFileSync } from "node:fs";
import { loadTokenizer } from "./load_tokenizer.mjs";

const [nodeModules, dir, textsPath, outPath] = process.argv.slice(2);
const tokenizer = await loadTokenizer(nodeModules, dir);
const texts = JSON.parse(readFileSync(textsPath, "utf8"));
const out = texts.map((t) => {
  const ids = tokenizer.encode(t, { add_special_tokens: false }).ids;
  const withSpecial = tokenizer.encode(t, { add_special_tokens: true }).ids;
  return { ids, with_special: withSpecial, text: tokenizer.decode(ids, { skip_special_tokens: false }) };
});
writeFileSync(outPath, JSON.stringify(out));
