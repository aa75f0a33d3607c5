// Drives `orion serve`'s chat page in a headless Chromium (Debian's chromium, through npm's
// puppeteer-core; no downloaded browser), as a person would: types a message, presses Enter,
// waits for the streamed answer, then sends a second message in the same conversation.
//
//   node chat_page.mjs NODE_MODULES PAGE_URL OUT.json
//
// OUT.json gets, for each of the two turns, the answer's text as the page shows it, how many
// different texts the answer element showed while streaming, and the status line; plus the
// request bodies the page sent (to check that the conversation is kept). Exits non-zero with a
// message when the browser or the page fails.
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import path from "node:path";

const [modules, pageUrl, outPath] = process.argv.slice(2);
if (!outPath) {
  console.error("usage: node chat_page.mjs NODE_MODULES PAGE_URL OUT.json");
  process.exit(2);
}
const require = createRequire(path.resolve(modules) + "/");
const puppeteer = require("puppeteer-core");

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  // Root in a container has no user namespaces for Chromium's sandbox.
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage();
  const bodies = [];
  page.on("request", r => {
    if (r.url().endsWith("/v1/chat/completions")) bodies.push(JSON.parse(r.postData()));
  });
  const pageErrors = [];
  page.on("pageerror", e => pageErrors.push(String(e)));
  await page.goto(pageUrl, { waitUntil: "networkidle0", timeout: 30000 });
  // Every text the answer element shows, recorded in the page as it changes.
  await page.evaluate(() => {
    window.__seen = {};
    new MutationObserver(() => {
      for (const el of document.querySelectorAll(".turn.assistant")) {
        const id = el.id, t = el.querySelector(".text").textContent;
        const list = (window.__seen[id] = window.__seen[id] || []);
        if (t && list[list.length - 1] !== t) list.push(t);
      }
    }).observe(document.getElementById("log"), { childList: true, subtree: true, characterData: true });
  });
  const turns = [];
  for (const message of ["Name a colour", "And another one"]) {
    await page.evaluate(() => { delete document.getElementById("status").dataset.done; });
    await page.type("#input", message);
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.getElementById("status").dataset.done === "1" ||
                                     document.getElementById("status").textContent.startsWith("error"),
                               { timeout: 60000 });
    turns.push(await page.evaluate(() => {
      const replies = document.querySelectorAll(".turn.assistant");
      const last = replies[replies.length - 1];
      return { text: last.querySelector(".text").textContent, shown: (window.__seen[last.id] || []).length,
               status: document.getElementById("status").textContent };
    }));
  }
  const model = await page.$eval("#model", el => el.textContent);
  writeFileSync(outPath, JSON.stringify({ turns, bodies, model, pageErrors }, null, 1));
} finally {
  await browser.close();
}
