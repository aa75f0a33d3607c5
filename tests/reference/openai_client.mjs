// The official OpenAI client (npm openai) against `orion serve`: what tests/cli/serve_cli_test.cpp
// checks the server with. Usage: node openai_client.mjs NODE_MODULES BASE_URL CASES.json OUT.json
// CASES is a list of {"kind": "chat" | "chat_stream" | "completion" | "completion_stream" |
// "models", "params": {...}}; OUT gets, for each, {"text", "finish_reason", "usage", "chunks"}
// (streams: the text joined from the chunks), or {"models": [...]}, or {"error": {status, message}}.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, baseURL, casesPath, outPath] = process.argv.slice(2);
const { default: OpenAI } = await import(pathToFileURL(join(nodeModules, "openai/index.mjs")).href);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 120000 });
const cases = JSON.parse(readFileSync(casesPath, "utf8"));
const out = [];
for (const c of cases) {
  try {
    if (c.kind === "models") {
      const list = await client.models.list();
      out.push({ models: list.data.map((m) => m.id) });
    } else if (c.kind === "chat" || c.kind === "completion") {
      const r = c.kind === "chat" ? await client.chat.completions.create(c.params) : await client.completions.create(c.params);
      const choice = r.choices[0];
      out.push({ text: c.kind === "chat" ? choice.message.content : choice.text, finish_reason: choice.finish_reason, usage: r.usage, object: r.object });
    } else {
      const params = { ...c.params, stream: true, stream_options: { include_usage: true } };
      const stream = c.kind === "chat_stream" ? await client.chat.completions.create(params) : await client.completions.create(params);
      let text = "", finish = null, usage = null, chunks = 0;
      for await (const chunk of stream) {
        chunks++;
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices[0];
        if (!choice) continue;
        text += (c.kind === "chat_stream" ? choice.delta.content : choice.text) ?? "";
        if (choice.finish_reason) finish = choice.finish_reason;
      }
      out.push({ text, finish_reason: finish, usage, chunks });
    }
  } catch (e) {
    out.push({ error: { status: e.status ?? null, message: String(e.message) } });
  }
}
writeFileSync(outPath, JSON.stringify(out));
