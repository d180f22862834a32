// The `ollama` JavaScript client (npm `ollama`) as a client of the gateway: one streamed chat
// with a tool. Run by tests/it/ollama_api.rs as `node client.mjs BASE_URL KEY MODEL` with
// OLLAMA_JS naming the directory the package is installed in; prints one JSON object with
// the stream folded as an application folds it. Every judgement is made in the Rust test.
import { createRequire } from "node:module";

const [base, key, model] = process.argv.slice(2);
const { Ollama } = createRequire(`${process.env.OLLAMA_JS}/`)("ollama");
const client = new Ollama({ host: base, headers: { Authorization: `Bearer ${key}` } });
const city = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const stream = await client.chat({
  model,
  messages: [{ role: "user", content: "Weather in Paris?" }],
  tools: [{ type: "function", function: { name: "get_weather", description: "Current weather", parameters: city } }],
  stream: true,
});
let content = "";
const calls = [];
let last;
for await (const part of stream) {
  content += part.message.content;
  for (const call of part.message.tool_calls ?? []) {
    calls.push({ name: call.function.name, arguments: call.function.arguments });
  }
  last = part;
}
console.log(JSON.stringify({ content, calls, done: last.done, done_reason: last.done_reason }));
