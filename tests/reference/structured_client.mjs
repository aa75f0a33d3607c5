// Tool calls and JSON-schema answers from `orion serve`, through the official OpenAI client (npm
// openai) and checked by an independent JSON Schema validator (npm ajv): what
// tests/cli/serve_structured_test.cpp runs.
// Usage: node structured_client.mjs NODE_MODULES BASE_URL TOOLS REQUESTS OUT.json
// OUT gets {"round_trips": [...], "schema": {...}} (round trips when TOOLS is 1):
// - round_trips, streamed and not: the first answer's tool calls (name, arguments, whether the
//   arguments parse and validate against the tool's parameters), then the final answer to the
//   conversation with the assistant's calls and a tool message for each.
// - schema: REQUESTS chat requests with response_format json_schema, sixteen at a time: how many
//   answers parse, how many validate, their finish reasons, and the first few that fail.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, baseURL, toolsArg, requestsArg, outPath] = process.argv.slice(2);
const load = async (p) => import(pathToFileURL(join(nodeModules, p)).href);
const { default: OpenAI } = await load("openai/index.mjs");
const ajvModule = await load("ajv/dist/ajv.js");
const Ajv = ajvModule.default.default ?? ajvModule.default;
const ajv = new Ajv({ strict: true, allErrors: true });
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 120000 });

const weather = {
  type: "object",
  properties: {
    city: { type: "string", maxLength: 20 },
    unit: { enum: ["celsius", "fahrenheit"] },
    days: { type: "integer", minimum: 1, maximum: 7 },
  },
  required: ["city", "unit"],
};
const clock = { type: "object", properties: { zone: { type: "string", maxLength: 6 } }, required: ["zone"] };
const tools = [
  { type: "function", function: { name: "get_weather", description: "The weather in a city", parameters: weather } },
  { type: "function", function: { name: "get_time", description: "The time in a zone", parameters: clock } },
];
const validators = { get_weather: ajv.compile(weather), get_time: ajv.compile(clock) };

async function chat(params, stream) {
  if (!stream) {
    const r = await client.chat.completions.create(params);
    const m = r.choices[0].message;
    return { content: m.content, calls: m.tool_calls ?? [], finish_reason: r.choices[0].finish_reason, usage: r.usage };
  }
  const s = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let content = "", finish = null, usage = null;
  const calls = [];
  for await (const chunk of s) {
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    content += choice.delta.content ?? "";
    for (const d of choice.delta.tool_calls ?? []) {
      const c = (calls[d.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
      if (d.id) c.id = d.id;
      if (d.function?.name) c.function.name += d.function.name;
      if (d.function?.arguments) c.function.arguments += d.function.arguments;
    }
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  return { content, calls, finish_reason: finish, usage };
}

async function roundTrip(stream) {
  const messages = [{ role: "user", content: "What is the weather in Paris, and the time in CET?" }];
  const first = await chat({ model: "m", messages, tools, tool_choice: "required", max_tokens: 200, seed: 11 }, stream);
  const calls = first.calls.map((c) => {
    let args = null, parses = false;
    try {
      args = JSON.parse(c.function.arguments);
      parses = true;
    } catch {}
    const v = validators[c.function.name];
    return { id: c.id, name: c.function.name, arguments: c.function.arguments, parses, valid: parses && !!v && v(args) };
  });
  messages.push({ role: "assistant", content: first.content, tool_calls: first.calls });
  for (const c of first.calls) messages.push({ role: "tool", tool_call_id: c.id, content: JSON.stringify({ ok: true, value: 21 }) });
  const last = await chat({ model: "m", messages, tools, max_tokens: 16, seed: 12 }, stream);
  return { stream, first_finish: first.finish_reason, first_content: first.content, calls,
           final: { content: last.content, finish_reason: last.finish_reason, calls: last.calls.length, usage: last.usage } };
}

const record = {
  type: "object",
  properties: {
    name: { type: "string", minLength: 1, maxLength: 10 },
    age: { type: "integer", minimum: 0, maximum: 120 },
    role: { enum: ["admin", "editor", "viewer"] },
    email: { type: ["string", "null"], maxLength: 16 },
    address: { type: "object", properties: { city: { type: "string", maxLength: 10 }, zip: { type: "integer", minimum: 1000, maximum: 99999 } },
               required: ["city"] },
    scores: { type: "array", items: { type: "number", minimum: 0, maximum: 10 }, minItems: 1, maxItems: 3 },
    tags: { type: "array", items: { enum: ["a", "b", "c"] }, maxItems: 2 },
    active: { type: "boolean" },
  },
  required: ["name", "age", "role", "address", "scores"],
};

async function schemaRuns(n) {
  const validate = ajv.compile(record);
  const out = { requests: n, parsed: 0, valid: 0, finish_reasons: {}, failures: [], completion_tokens: 0 };
  const one = async (i) => {
    const r = await client.chat.completions.create({
      model: "m", messages: [{ role: "user", content: `Record number ${i}` }], max_tokens: 400, seed: 100 + i,
      response_format: { type: "json_schema", json_schema: { name: "record", strict: true, schema: record } },
    });
    const text = r.choices[0].message.content;
    out.finish_reasons[r.choices[0].finish_reason] = (out.finish_reasons[r.choices[0].finish_reason] ?? 0) + 1;
    out.completion_tokens += r.usage.completion_tokens;
    let value;
    try {
      value = JSON.parse(text);
      out.parsed++;
    } catch {
      if (out.failures.length < 3) out.failures.push({ text, why: "does not parse" });
      return;
    }
    if (validate(value)) out.valid++;
    else if (out.failures.length < 3) out.failures.push({ text, why: ajv.errorsText(validate.errors) });
  };
  // Sixteen clients, each taking the next request as its last is answered.
  let next = 0;
  const client_loop = async () => {
    while (next < n) await one(next++);
  };
  await Promise.all(Array.from({ length: 16 }, client_loop));
  return out;
}

const result = { round_trips: [], schema: null };
try {
  if (toolsArg === "1") {
    result.round_trips.push(await roundTrip(false));
    result.round_trips.push(await roundTrip(true));
  }
  if (Number(requestsArg) > 0) result.schema = await schemaRuns(Number(requestsArg));
} catch (e) {
  result.error = { status: e.status ?? null, message: String(e.message) };
}
writeFileSync(outPath, JSON.stringify(result));
