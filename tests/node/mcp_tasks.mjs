// The official MCP TypeScript SDK's task client (`@modelcontextprotocol/sdk`,
// `client.experimental.tasks`), unmodified, against toolgate's `/mcp/{agent}`. Run by
// tests/mcp_tasks.rs:
//
//   node mcp_tasks.mjs BASE AGENT KEY OTHER_TENANT_KEY
//
// 1. `callToolStream` calls write_file (CONFIRM): the task is created `input_required`;
//    the line `{"event":"input_required",...}` tells the Rust test, which approves the
//    call in the inbox API of another worker, while the stream waits in `tasks/result`;
//    the stream ends with the tool's result.
// 2. Another call is cancelled with `cancelTask` while the stream waits: the stream
//    ends with the cancelled call's error result, and the task reads `cancelled`.
// 3. `listTasks` lists both; a caller of another tenant cannot read them.
// Every check throws on failure; the last line is a JSON object.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [base, agent, key, otherKey] = process.argv.slice(2);
const say = (o) => console.log(JSON.stringify(o));
const check = (ok, what) => {
  if (!ok) throw new Error(what);
};

async function connect(bearer) {
  const client = new Client({ name: "toolgate-task-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/${agent}`), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  await client.connect(transport);
  return client;
}

const text = (result) => (result?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

// Follows one task-augmented call to its end; `onWaiting` runs (not awaited) when the
// task first reads input_required.
async function follow(client, args, onWaiting) {
  const seen = [];
  let taskId = null;
  let end = null;
  const stream = client.experimental.tasks.callToolStream(
    { name: "write_file", arguments: args },
    undefined,
    { timeout: 120_000 },
  );
  for await (const m of stream) {
    if (m.type === "taskCreated") {
      taskId = m.task.taskId;
      seen.push(`created:${m.task.status}`);
    } else if (m.type === "taskStatus") {
      seen.push(m.task.status);
      if (m.task.status === "input_required") onWaiting(m.task);
    } else if (m.type === "result") {
      end = { result: m.result };
    } else if (m.type === "error") {
      end = { error: String(m.error?.message ?? m.error) };
    }
  }
  return { taskId, seen, ...end };
}

const client = await connect(key);
check(client.getServerCapabilities()?.tasks?.requests?.tools?.call, "the server declares task-augmented tools/call");
const { tools } = await client.listTools();
const write = tools.find((t) => t.name === "write_file");
check(write?.execution?.taskSupport === "optional", `write_file's taskSupport: ${JSON.stringify(write)}`);

// 1. Approved in the inbox of another worker.
const approved = await follow(client, { path: "tasked.txt", content: "approved" }, (task) =>
  say({ event: "input_required", taskId: task.taskId, message: task.statusMessage }),
);
check(approved.seen[0] === "created:input_required", `first status: ${approved.seen}`);
check(approved.result && !approved.result.isError, `approved result: ${JSON.stringify(approved)}`);
check(text(approved.result).includes("tasked.txt"), `approved text: ${text(approved.result)}`);
check(
  approved.result._meta?.["io.modelcontextprotocol/related-task"]?.taskId === approved.taskId,
  "the result names its task",
);
const done = await client.experimental.tasks.getTask(approved.taskId);
check(done.status === "completed", `after the result: ${done.status}`);

// 2. Cancelled by the client while the stream waits in tasks/result.
let cancelled = null;
const dropped = await follow(client, { path: "cancelled.txt", content: "never" }, (task) => {
  setTimeout(() => {
    cancelled = client.experimental.tasks.cancelTask(task.taskId);
  }, 300);
});
const cancelAnswer = await cancelled;
check(cancelAnswer?.status === "cancelled", `cancelTask answered ${JSON.stringify(cancelAnswer)}`);
check(dropped.result?.isError === true, `the cancelled stream's end: ${JSON.stringify(dropped)}`);
check(/cancel/.test(text(dropped.result)), `cancelled text: ${text(dropped.result)}`);
const after = await client.experimental.tasks.getTask(dropped.taskId);
check(after.status === "cancelled", `after the cancel: ${after.status}`);
let again = null;
try {
  await client.experimental.tasks.cancelTask(dropped.taskId);
} catch (e) {
  again = String(e.message ?? e);
}
check(again && /cannot be cancelled/.test(again), `a second cancel: ${again}`);

// 3. Listed for this tenant; unknown to another tenant.
const listed = await client.experimental.tasks.listTasks();
const statuses = Object.fromEntries(listed.tasks.map((t) => [t.taskId, t.status]));
check(statuses[approved.taskId] === "completed", `listed: ${JSON.stringify(statuses)}`);
check(statuses[dropped.taskId] === "cancelled", `listed: ${JSON.stringify(statuses)}`);
const other = await connect(otherKey);
let foreign = null;
try {
  await other.experimental.tasks.getTask(approved.taskId);
} catch (e) {
  foreign = String(e.message ?? e);
}
check(foreign && /no task/.test(foreign), `another tenant reads: ${foreign}`);
const otherList = await other.experimental.tasks.listTasks();
check(otherList.tasks.length === 0, `another tenant lists: ${JSON.stringify(otherList)}`);
await other.close();
await client.close();
say({ approved, dropped: { taskId: dropped.taskId, seen: dropped.seen }, listed: statuses });
