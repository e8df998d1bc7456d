#!/usr/bin/env node
// A chat.completions client on Node's built-in fetch, no SDK.   harness-apis: chat
//
// A `command:` target (harness/targets/command.py): the prompt on stdin, the reply on
// stdout, a non-zero exit with a one-line reason on stderr's last line. Uses fetch's
// defaults (undici: 300 s headers timeout, 300 s body timeout between chunks); a stream
// must end with `data: [DONE]` or the call fails instead of returning a prefix.
import { text } from "node:stream/consumers";

async function main() {
  const prompt = await text(process.stdin);
  const stream = process.env.HARNESS_STREAM !== "0";
  const body = {
    model: process.env.HARNESS_MODEL || "test-model",
    messages: [{ role: "user", content: prompt }],
    stream,
  };
  if (process.env.HARNESS_MAX_TOKENS) body.max_tokens = Number(process.env.HARNESS_MAX_TOKENS);
  const res = await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${process.env.OPENAI_API_KEY}`,
      "content-type": "application/json",
    },
    body: JSON.stringify(body),
  });
  if (!res.ok) {
    const detail = (await res.text()).replace(/\s+/g, " ").slice(0, 200);
    throw new Error(`HTTP ${res.status}: ${detail}`);
  }
  if (!stream) {
    const doc = await res.json();
    const content = doc?.choices?.[0]?.message?.content;
    if (typeof content !== "string") throw new Error("no message content in the response");
    process.stdout.write(content);
    return;
  }
  const parts = [];
  let done = false;
  let buffer = "";
  for await (const chunk of res.body.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, newline).replace(/\r$/, "");
      buffer = buffer.slice(newline + 1);
      if (!line.startsWith("data: ")) continue;
      const data = line.slice(6);
      if (data === "[DONE]") {
        done = true;
        continue;
      }
      for (const choice of JSON.parse(data).choices ?? []) {
        if (choice.delta?.content) parts.push(choice.delta.content);
      }
    }
  }
  if (!done) throw new Error("stream ended without data: [DONE]");
  process.stdout.write(parts.join(""));
}

main().catch((err) => {
  const cause = err.cause ? ` (${err.cause.code || err.cause.message || err.cause})` : "";
  console.error(`${err.name}: ${err.message}${cause}`.replace(/\n/g, " "));
  process.exit(1);
});
