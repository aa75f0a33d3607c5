// The official OpenAI client (npm openai) against `orion serve` as newer clients use it: chat
// messages with content parts and a developer message, and the Responses API, created and
// streamed, two turns each through previous_response_id. What
// tests/cli/serve_responses_test.cpp compares with `orion generate` and the chat endpoint.
// Usage: node responses_client.mjs NODE_MODULES BASE_URL OUT.json
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, baseURL, outPath] = process.argv.slice(2);
const { default: OpenAI } = await import(pathToFileURL(join(nodeModules, "openai/index.mjs")).href);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 120000 });
const out = {};
try {
  const chat = await client.chat.completions.create({
    model: "m", max_tokens: 12, temperature: 0,
    messages: [{ role: "developer", content: "Be brief." },
               { role: "user", content: [{ type: "text", text: "Hello" }, { type: "text", text: "there" }] }],
  });
  out.chat = chat.choices[0].message.content;

  const settings = { model: "m", max_output_tokens: 12, temperature: 0 };
  const r1 = await client.responses.create({ ...settings, instructions: "Be brief.", input: "Name a colour" });
  const r2 = await client.responses.create({ ...settings, previous_response_id: r1.id, input: "And another one" });
  out.created = [r1, r2].map((r) => ({ id: r.id, text: r.output_text, status: r.status, usage: r.usage, object: r.object }));

  const turn = async (params) => {
    const stream = client.responses.stream(params);
    const types = [];
    let deltas = "";
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.output_text.delta") deltas += event.delta;
    }
    const final = await stream.finalResponse();
    // The stream's final object has no output_text (the client adds it to create()'s only).
    const text = final.output.filter((o) => o.type === "message").flatMap((o) => o.content).map((c) => c.text ?? "").join("");
    return { id: final.id, text, deltas, types, usage: final.usage };
  };
  const s1 = await turn({ ...settings, instructions: "Be brief.", input: "Name a colour" });
  const s2 = await turn({ ...settings, previous_response_id: s1.id, input: [{ role: "user", content: [{ type: "input_text", text: "And another one" }] }] });
  out.streamed = [s1, s2];
} catch (e) {
  out.error = { status: e.status ?? null, message: String(e.message) };
}
writeFileSync(outPath, JSON.stringify(out));
