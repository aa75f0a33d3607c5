// The independent reader of the GGUF files tests/reference/make_gguf.py writes: Hugging Face's
// JavaScript GGUF parser (npm @huggingface/gguf), whose answer the tests compare with what the
// writer meant (its --manifest) and with Orion's reader (tests/model/gguf_test.cpp).
// Usage: node read_gguf.mjs NODE_MODULES FILE.gguf OUT.json
// OUT gets {"version", "metadata": {key: {"type", "subType"?, "value"}}, "tensors": [{"name",
// "dims" (ggml's order), "type", "offset" (relative to the data section)}], "data_offset"}.
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [nodeModules, file, outPath] = process.argv.slice(2);
const { gguf } = await import(pathToFileURL(path.join(nodeModules, "@huggingface/gguf/dist/index.mjs")).href);
const parsed = await gguf(path.resolve(file), { allowLocalFile: true, typedMetadata: true });
const metadata = {};
for (const [key, entry] of Object.entries(parsed.typedMetadata)) {
  // The parser adds the header's fields as keys of its own.
  if (key === "version" || key === "tensor_count" || key === "kv_count") continue;
  metadata[key] = { type: entry.type, value: entry.value };
  if (entry.subType !== undefined) metadata[key].subType = entry.subType;
}
const out = {
  version: Number(parsed.metadata.version),
  metadata,
  tensors: parsed.tensorInfos.map((t) => ({ name: t.name, dims: t.shape.map(Number), type: t.dtype, offset: Number(t.offset) })),
  data_offset: Number(parsed.tensorDataOffset),
};
writeFileSync(outPath, JSON.stringify(out, (_, v) => (typeof v === "bigint" ? Number(v) : v)));
