// A bounded load on `orion serve` from concurrent clients over loopback (Node's own fetch):
//
//   node load_clients.mjs BASE_URL SECONDS CLIENTS EXPECTED.json OUT.json
//
// Client i plays one role for the whole run, by i % 5: 0 streams a long answer and disconnects
// after its first chunk; 1 sends malformed requests in turn (truncated JSON, wrong types, a
// huge max_tokens, a 10 MB body, invalid UTF-8); the others send well-formed greedy requests
// (chat and completion, streamed and not) whose text must equal EXPECTED.json's ("chat",
// "completion": what `orion generate --temp 0` gives for the same prompts, max_tokens 8).
// Each client sends one request after another until SECONDS have passed. OUT.json gets the
// counts of each kind and every failure seen (a wrong answer, a malformed request that was not
// a 4xx with OpenAI's error object, a connection error); the exit status is 0 when the run
// itself could be made, whatever it found.
import { readFileSync, writeFileSync } from "node:fs";

const [base, secondsArg, clientsArg, expectedPath, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node load_clients.mjs BASE_URL SECONDS CLIENTS EXPECTED.json OUT.json");
  process.exit(2);
}
const expected = JSON.parse(readFileSync(expectedPath, "utf8"));
const until = Date.now() + Number(secondsArg) * 1000;
const counts = { ok: 0, disconnected: 0, malformed: 0 };
const failures = [];
const fail = (what, detail) => { if (failures.length < 50) failures.push({ what, detail: String(detail).slice(0, 300) }); };

const chat = { messages: [{ role: "user", content: "Name a colour" }], max_tokens: 8, temperature: 0 };
const completion = { prompt: "In the beginning", max_tokens: 8, temperature: 0 };

function post(path, body, signal) {
  return fetch(base + path, { method: "POST", headers: { "Content-Type": "application/json" }, body, signal });
}

// The text of a streamed answer (server-sent events), checked for the chunks' shape.
async function streamed(res, kind) {
  const raw = await res.text();
  let text = "", done = false, finish = null;
  for (const event of raw.split("\n\n")) {
    if (!event.startsWith("data: ")) continue;
    const data = event.slice(6);
    if (data === "[DONE]") { done = true; continue; }
    const j = JSON.parse(data);
    const c = j.choices && j.choices[0];
    if (!c) continue;
    text += (kind === "chat" ? c.delta && c.delta.content : c.text) || "";
    if (c.finish_reason) finish = c.finish_reason;
  }
  if (!done) throw new Error("no [DONE]");
  return { text, finish };
}

async function wellFormed(n) {
  const kind = n % 2 === 0 ? "chat" : "completion";
  const stream = n % 4 >= 2;
  const body = { ...(kind === "chat" ? chat : completion), stream };
  const res = await post(kind === "chat" ? "/v1/chat/completions" : "/v1/completions", JSON.stringify(body));
  if (res.status !== 200) return fail(`${kind} stream=${stream}: status ${res.status}`, await res.text());
  let text, finish;
  if (stream) ({ text, finish } = await streamed(res, kind));
  else {
    const j = await res.json();
    text = kind === "chat" ? j.choices[0].message.content : j.choices[0].text;
    finish = j.choices[0].finish_reason;
    if (j.usage.completion_tokens !== 8) return fail(`${kind}: usage`, JSON.stringify(j.usage));
  }
  if (text !== expected[kind]) return fail(`${kind} stream=${stream}: wrong text`, JSON.stringify({ text, want: expected[kind] }));
  if (finish !== "length") return fail(`${kind} stream=${stream}: finish ${finish}`, text);
  counts.ok++;
}

async function disconnect() {
  const ctl = new AbortController();
  const res = await post("/v1/chat/completions", JSON.stringify({ ...chat, max_tokens: 200, stream: true }), ctl.signal);
  if (res.status !== 200) return fail(`disconnecting client: status ${res.status}`, await res.text());
  const reader = res.body.getReader();
  await reader.read();  // the first chunk, then gone
  ctl.abort();
  await reader.cancel().catch(() => {});
  counts.disconnected++;
}

const tenMegabytes = JSON.stringify({ messages: [{ role: "user", content: "x".repeat(10 * 1000 * 1000) }] });
const malformedBodies = [
  ["truncated JSON", '{"messages": [{"role": "user", "content": "hi"}'],
  ["wrong types", JSON.stringify({ messages: "hi", max_tokens: "ten" })],
  ["wrong type of temperature", JSON.stringify({ ...chat, temperature: "hot" })],
  ["huge max_tokens", JSON.stringify({ ...chat, max_tokens: 1e12 })],
  ["10 MB body", tenMegabytes],
  ["invalid UTF-8", Buffer.concat([Buffer.from('{"messages": [{"role": "user", "content": "a'),
                                   Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}]}')])],
];

async function malformed(n) {
  const [what, body] = malformedBodies[n % malformedBodies.length];
  const res = await post("/v1/chat/completions", body);
  const text = await res.text();
  if (res.status < 400 || res.status >= 500) return fail(`${what}: status ${res.status}`, text);
  let j;
  try { j = JSON.parse(text); } catch { return fail(`${what}: not JSON`, text); }
  if (!j.error || typeof j.error.message !== "string" || typeof j.error.type !== "string")
    return fail(`${what}: no error object`, text);
  counts.malformed++;
}

async function client(i) {
  for (let n = 0; Date.now() < until; ++n) {
    try {
      if (i % 5 === 0) await disconnect();
      else if (i % 5 === 1) await malformed(n);
      else await wellFormed(n + i);
    } catch (e) {
      fail(`client ${i}: ${e.name}`, e.message);
    }
  }
}

await Promise.all(Array.from({ length: Number(clientsArg) }, (_, i) => client(i)));
writeFileSync(outPath, JSON.stringify({ counts, failures }, null, 1));
