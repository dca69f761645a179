// A run driven by a typed TypeScript client: openapi-typescript's types (api.d.ts,
// generated from toolgate's own /openapi.json by tests/openapi_clients.rs) with
// openapi-fetch, compiled by tsc --strict, then run on Node 22:
//
//   node openapi_client_run.js BASE_URL KEY
//
// Starts an `assistant` run, approves write_file, submits ask_user's output, and gets
// the run. Type errors (a field typed `never`, arguments typed `unknown`) fail the
// compile; wrong answers fail the asserts. The last line is a JSON object.
import createClient from "openapi-fetch";
import type { components, paths } from "./api.js";

type RunObject = components["schemas"]["RunObject"];

function check(ok: boolean, what: string): asserts ok {
  if (!ok) {
    throw new Error(what);
  }
}

async function main(base: string, key: string): Promise<void> {
  // JSON answers only: the same routes answer SSE when asked to stream.
  const client = createClient<paths, "application/json">({
    baseUrl: base,
    headers: { Authorization: `Bearer ${key}` },
  });
  const started = await client.POST("/v1/runs", {
    body: { agent: "assistant", input: "Work out 2+3*4" },
  });
  check(started.data !== undefined, `create: ${JSON.stringify(started.error)}`);
  const run: RunObject = started.data;
  check(run.status === "requires_action", `status ${run.status}`);
  const items = run.required_action?.items ?? [];
  const write = items.find((i) => i.call_id === "call_write");
  check(write !== undefined, "no call_write item");
  // Arguments are a JSON object: indexing it type-checks.
  const path: unknown = write.arguments["path"];
  check(path === "result.txt", `arguments ${JSON.stringify(write.arguments)}`);

  const approved = await client.POST("/v1/runs/{id}/approve", {
    params: { path: { id: run.id } },
    body: { call_id: "call_write" },
  });
  check(approved.data !== undefined, `approve: ${JSON.stringify(approved.error)}`);
  const submitted = await client.POST("/v1/runs/{id}/submit", {
    params: { path: { id: run.id } },
    body: { call_id: "call_ask", output: "blue" },
  });
  check(submitted.data !== undefined, `submit: ${JSON.stringify(submitted.error)}`);
  const got = await client.GET("/v1/runs/{id}", { params: { path: { id: run.id } } });
  check(got.data !== undefined, `get: ${JSON.stringify(got.error)}`);
  check(got.data.status === "completed", `final status ${got.data.status}`);
  console.log(JSON.stringify({ run: got.data.id, status: got.data.status, output: got.data.output }));
}

main(process.argv[2] ?? "", process.argv[3] ?? "").catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
