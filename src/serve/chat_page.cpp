#include "serve/chat_page.h"

namespace orion::serve {

const std::string& chat_page_html() {
  static const std::string page = R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Orion chat</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; max-width: 46rem; margin: 0 auto; padding: 1rem; color: #222; }
  h1 { font-size: 1.1rem; margin: 0 0 .6rem; }
  #log { border: 1px solid #ccc; border-radius: 6px; padding: .6rem; min-height: 18rem; overflow-y: auto; max-height: 70vh; }
  .turn { margin: .4rem 0; white-space: pre-wrap; }
  .user { color: #0a4d8c; }
  .assistant { color: #222; }
  .role { font-weight: 600; margin-right: .4rem; }
  form { display: flex; gap: .5rem; margin-top: .6rem; }
  textarea { flex: 1; font: inherit; padding: .4rem; min-height: 2.6rem; }
  button { font: inherit; padding: .4rem .9rem; }
  #status { color: #666; font-size: .85rem; margin-top: .4rem; min-height: 1.2em; }
</style>
</head>
<body>
<h1>Orion chat <span id="model"></span></h1>
<div id="log"></div>
<form id="form">
  <textarea id="input" placeholder="Your message (Enter sends, Shift+Enter for a new line)"></textarea>
  <button id="send" type="submit">Send</button>
  <button id="reset" type="button">New chat</button>
</form>
<div id="status"></div>
<script>
"use strict";
const log = document.getElementById("log"), input = document.getElementById("input"),
      statusLine = document.getElementById("status"), sendButton = document.getElementById("send");
let messages = [];
let busy = false;
// Sampling settings from the page's address (/?temperature=0&max_tokens=64), sent with every
// request; numbers only, anything else is left to the server's defaults.
const settings = {};
for (const [k, v] of new URLSearchParams(location.search))
  if (["temperature", "top_p", "top_k", "max_tokens", "seed"].includes(k) && v !== "" && !isNaN(Number(v)))
    settings[k] = Number(v);

fetch("/v1/models").then(r => r.json()).then(j => {
  if (j.data && j.data[0]) document.getElementById("model").textContent = "(" + j.data[0].id + ")";
}).catch(() => {});

function addTurn(role, text) {
  const div = document.createElement("div");
  div.className = "turn " + role;
  const who = document.createElement("span");
  who.className = "role";
  who.textContent = role === "user" ? "You:" : "Model:";
  const body = document.createElement("span");
  body.className = "text";
  body.textContent = text;
  div.append(who, body);
  log.append(div);
  log.scrollTop = log.scrollHeight;
  return body;
}

async function send(text) {
  busy = true;
  sendButton.disabled = true;
  messages.push({role: "user", content: text});
  addTurn("user", text);
  const out = addTurn("assistant", "");
  out.parentElement.id = "reply-" + messages.length;
  let reply = "", tokens = 0, first = 0;
  const start = performance.now();
  statusLine.textContent = "waiting for the first token...";
  try {
    const res = await fetch("/v1/chat/completions", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({...settings, messages, stream: true, stream_options: {include_usage: true}})
    });
    if (!res.ok) {
      const j = await res.json().catch(() => ({}));
      throw new Error((j.error && j.error.message) || ("HTTP " + res.status));
    }
    const reader = res.body.getReader(), decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, {stream: true});
      let at;
      while ((at = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        if (!event.startsWith("data: ")) continue;
        const data = event.slice(6);
        if (data === "[DONE]") continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message);
        if (j.usage) tokens = j.usage.completion_tokens;
        const piece = j.choices && j.choices[0] && j.choices[0].delta && j.choices[0].delta.content;
        if (piece) {
          if (!first) first = performance.now();
          reply += piece;
          out.textContent = reply;
          log.scrollTop = log.scrollHeight;
          statusLine.textContent = "streaming...";
        }
      }
    }
    const total = (performance.now() - start) / 1000, decode = first ? (performance.now() - first) / 1000 : 0;
    statusLine.textContent = tokens + " tokens in " + total.toFixed(2) + " s" +
      (tokens > 1 && decode > 0 ? ", " + ((tokens - 1) / decode).toFixed(1) + " tok/s" : "") +
      (first ? ", first token after " + ((first - start) / 1000).toFixed(2) + " s" : "");
    statusLine.dataset.done = "1";
    messages.push({role: "assistant", content: reply});
  } catch (e) {
    statusLine.textContent = "error: " + e.message;
    messages.pop();
  } finally {
    busy = false;
    sendButton.disabled = false;
  }
}

document.getElementById("form").addEventListener("submit", e => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text || busy) return;
  input.value = "";
  send(text);
});
input.addEventListener("keydown", e => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); document.getElementById("form").requestSubmit(); }
});
document.getElementById("reset").addEventListener("click", () => {
  messages = [];
  log.textContent = "";
  statusLine.textContent = "";
});
</script>
</body>
</html>
)HTML";
  return page;
}

}  // namespace orion::serve
