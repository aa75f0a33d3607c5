// A stream's pace while another client's long prompt is prefilled: what
// tests/cli/serve_prompt_cache_test.cpp checks the server's chunked prefill with.
// Usage: node stall_client.mjs BASE_URL PROMPT_FILE OUT.json
// Stream A (a text completion, greedy, 240 tokens past end-of-text) is read as it comes (a chunk a
// token, or more when the server writes faster than this reads); after
// its 40th chunk, request B sends PROMPT_FILE's text as its prompt. OUT gets A's gaps between
// tokens (ms, in order), the gaps while B was being answered, and B's time and usage.
import { readFileSync, writeFileSync } from "node:fs";

const [baseURL, promptPath, outPath] = process.argv.slice(2);
const longPrompt = readFileSync(promptPath, "utf8");
const post = (path, body) =>
  fetch(baseURL + path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

const times = [];
let bStart = null, bEnd = null, bUsage = null, bStatus = null, bPromise = null;
const res = await post("/v1/completions", { prompt: "Once upon a time", max_tokens: 240, temperature: 0, ignore_eos: true, stream: true });
const reader = res.body.getReader();
const decoder = new TextDecoder();
let buffer = "";
for (;;) {
  const { value, done } = await reader.read();
  if (done) break;
  buffer += decoder.decode(value, { stream: true });
  let at;
  while ((at = buffer.indexOf("\n\n")) >= 0) {
    const event = buffer.slice(0, at);
    buffer = buffer.slice(at + 2);
    if (!event.startsWith("data: ") || event === "data: [DONE]") continue;
    const chunk = JSON.parse(event.slice(6));
    if (!chunk.choices?.[0]?.text) continue;
    times.push(performance.now());
    if (times.length === 40) {
      bStart = performance.now();
      bPromise = post("/v1/completions", { prompt: longPrompt, max_tokens: 4, temperature: 0 }).then(async (r) => {
        bStatus = r.status;
        bUsage = (await r.json()).usage;
        bEnd = performance.now();
      });
    }
  }
}
if (bPromise) await bPromise;
const gaps = times.slice(1).map((t, i) => t - times[i]);
const during = times.slice(1).map((t, i) => [times[i], t - times[i]]).filter(([t0]) => bStart !== null && t0 >= bStart && t0 <= bEnd).map(([, g]) => g);
writeFileSync(outPath, JSON.stringify({ tokens: times.length, gaps, during, b_ms: bEnd - bStart, b_status: bStatus, b_usage: bUsage }));
