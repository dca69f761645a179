// toolgate's Responses endpoint driven by the official OpenAI Node SDK (npm `openai`
// 7.x, on Node 22), unmodified. Run by tests/openai_node_sdk.rs:
//
//   node responses_sdk.mjs BASE_URL KEY
//
// create (every field the SDK's `Response` type requires is present), the strict
// stream accumulator (`responses.stream` ... `finalResponse`), tool progress events,
// retrieve with `stream: true`, a paused response cancelled (a later approval is
// refused), a function tool the request declares (called, answered), delete.
// Every check throws on failure; the last line is a JSON object.
import OpenAI from "openai";

const [base, key] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base, apiKey: key, maxRetries: 0, timeout: 60_000 });

function check(ok, what) {
  if (!ok) throw new Error(what);
}

// The required (non-optional) fields of the SDK's `Response` type.
const REQUIRED = [
  "id", "access_programs", "created_at", "error", "incomplete_details", "instructions",
  "metadata", "model", "object", "output", "parallel_tool_calls", "temperature",
  "tool_choice", "tools", "top_p",
];

const out = {};
const r = await client.responses.create({ model: "agent:helper", input: "What is 2+3*4?" });
for (const field of REQUIRED) {
  check(field in r, `the response lacks ${field}: ${JSON.stringify(r)}`);
}
check(r.status === "completed", `status ${r.status}`);
check(r.output_text.includes("14"), `output_text ${r.output_text}`);
out.created = r.id;

// The strict accumulator: every event must fit the response it builds.
const stream = client.responses.stream({ model: "agent:helper", input: "What is 2+3*4?" });
const types = [];
stream.on("event", (e) => types.push(e.type));
const final = await stream.finalResponse();
check(final.status === "completed", `streamed status ${final.status}`);
check(final.output_text === r.output_text, `streamed text ${final.output_text}`);
check(types[0] === "response.created" && types.at(-1) === "response.completed", types.join(","));
out.streamed = types.length;

// Tool progress (response.mcp_call.in_progress with `progress`) fits the accumulator.
const counting = client.responses.stream({ model: "agent:counting", input: "Count." });
const progress = [];
counting.on("event", (e) => {
  if (e.type === "response.mcp_call.in_progress" && e.progress) progress.push(e.progress.text);
});
const counted = await counting.finalResponse();
check(counted.status === "completed", `counting status ${counted.status}`);
check(progress.join("|") === "step 1 of 3|step 2 of 3|step 3 of 3", `progress ${progress}`);
out.progress = progress.length;

// retrieve, replayed as a stream.
const replayed = [];
for await (const e of await client.responses.retrieve(r.id, { stream: true })) {
  replayed.push(e);
}
check(replayed[0].type === "response.created", replayed.map((e) => e.type).join(","));
check(replayed.at(-1).type === "response.completed", replayed.map((e) => e.type).join(","));
check(replayed.at(-1).response.id === r.id, "replayed another response");

// A paused response, cancelled: its approval is refused afterwards.
const paused = await client.responses.create({
  model: "agent:writer",
  input: "Save 2+3*4 and ask my colour.",
});
const request = paused.output.find((o) => o.type === "mcp_approval_request");
check(request !== undefined, `no approval request: ${JSON.stringify(paused.output)}`);
const cancelled = await client.responses.cancel(paused.id);
check(cancelled.status === "cancelled", `cancel status ${cancelled.status}`);
let refused = null;
try {
  await client.responses.create({
    model: "agent:writer",
    previous_response_id: paused.id,
    input: [{ type: "mcp_approval_response", approval_request_id: request.id, approve: true }],
  });
} catch (e) {
  refused = e;
}
check(refused instanceof OpenAI.ConflictError, `approval after cancel: ${refused}`);
out.cancelled = paused.id;

// A function tool the request declares: the model calls it, the (strict) accumulator
// builds the function_call, and a function_call_output answers it.
const weather = {
  type: "function",
  name: "get_weather",
  description: "The weather in a city, now.",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false,
  },
  strict: true,
};
const asking = client.responses.stream({ model: "agent:declaring", input: "Weather in Paris?", tools: [weather] });
const asked = await asking.finalResponse();
const call = asked.output.at(-1);
check(call.type === "function_call" && call.name === "get_weather", `no function_call: ${JSON.stringify(asked.output)}`);
check(JSON.parse(call.arguments).city === "Paris", `arguments ${call.arguments}`);
const answered = await client.responses.create({
  model: "agent:declaring",
  previous_response_id: asked.id,
  input: [{ type: "function_call_output", call_id: call.call_id, output: "sunny" }],
  tools: [weather],
});
check(answered.status === "completed", `answered status ${answered.status}`);
check(answered.output_text === "It is sunny in Paris.", `answered text ${answered.output_text}`);
out.function_call = call.call_id;

// delete, then retrieve is a 404.
await client.responses.delete(r.id);
let gone = null;
try {
  await client.responses.retrieve(r.id);
} catch (e) {
  gone = e;
}
check(gone instanceof OpenAI.NotFoundError, `retrieve after delete: ${gone}`);
out.deleted = r.id;
console.log(JSON.stringify(out));
