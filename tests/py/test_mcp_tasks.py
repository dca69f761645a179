"""MCP tasks (protocol 2025-11-25) over `toolgate mcp` (stdio), with the official `mcp`
SDK. Its `ClientSession` has the task types but neither declares tasks nor takes a task
as the answer to `tools/call`: `TaskSession` below is the small extension it needs.
Run by tests/mcp_tasks.rs:

    python test_mcp_tasks.py TOOLGATE DB AGENT WORKSPACE

- A task outlives its process: created `input_required` by one `toolgate mcp`, approved
  from the command line (another process), read `completed` by the next `toolgate mcp`,
  whose `tasks/result` gives the call's result.
- `tasks/result` waits while the call waits, telling each status (`notifications/tasks/
  status`), and answers once another process approved it.
- A caller of another tenant (`--tenant`) knows none of these tasks.
- A task whose TTL ran out is gone, and its waiting call is cancelled (never runs).

Every check is an assert; the last line printed is a JSON object the Rust test reads.
"""

import json
import os
import subprocess
import sys
import threading
import time

import anyio
from mcp import types
from mcp.client.extension import NotificationBinding
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError


class TaskSession(ClientSession):
    """`ClientSession` with the 2025-11-25 task methods: declares task support, sends a
    task-augmented `tools/call` (whose answer is a `CreateTaskResult`, which the
    session's own `call_tool` would refuse), and `tasks/get|result|list|cancel`."""

    def _build_capabilities(self, version):
        caps = super()._build_capabilities(version)
        return caps.model_copy(update={"tasks": types.ClientTasksCapability()})

    async def call_tool_as_task(self, name, arguments, ttl=None):
        params = types.CallToolRequestParams(
            name=name, arguments=arguments, task=types.TaskMetadata(ttl=ttl)
        ).model_dump(by_alias=True, mode="json", exclude_none=True)
        raw = await self._dispatcher.send_raw_request("tools/call", params, {})
        return types.CreateTaskResult.model_validate(raw, by_name=False)

    async def get_task(self, task_id):
        return await self.send_request(
            types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)),
            types.GetTaskResult,
        )

    async def task_result(self, task_id):
        return await self.send_request(
            types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
            types.CallToolResult,
        )

    async def list_tasks(self):
        return await self.send_request(types.ListTasksRequest(), types.ListTasksResult)

    async def cancel_task(self, task_id):
        return await self.send_request(
            types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id)),
            types.CancelTaskResult,
        )


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


class Gateway:
    def __init__(self, toolgate, db, agent, workspace):
        self.toolgate, self.db, self.agent, self.workspace = toolgate, db, agent, workspace

    def params(self, tenant):
        return StdioServerParameters(
            command=self.toolgate,
            args=["--tenant", tenant, "mcp", "--agent", self.agent, "--workspace", self.workspace, "--db", self.db],
            env={"TOOLGATE_DB": self.db},
        )

    def cli(self, *args):
        return subprocess.run([self.toolgate, "--db", self.db, *args], capture_output=True, text=True)

    def run_of(self, message):
        """The run id a task's status message names."""
        return next(w for w in message.replace(")", " ").split() if w.startswith("run_"))

    def run(self, run_id):
        out = self.cli("--tenant", "acme", "show", run_id, "--json")
        # (Exit 3: the run waits for a decision.)
        assert out.returncode in (0, 3), out.stderr
        return json.loads(out.stdout)


async def scenario_survives(gw, out):
    # One process creates the task and goes away.
    async with stdio_client(gw.params("acme")) as (r, w):
        async with TaskSession(r, w) as s:
            init = await s.initialize()
            assert init.capabilities.tasks is not None, init.capabilities
            created = await s.call_tool_as_task("write_file", {"path": "kept.txt", "content": "kept"}, ttl=600000)
            task = created.task
            assert task.status == "input_required", task
            assert task.ttl == 600000, task
            got = await s.get_task(task.task_id)
            assert got.status == "input_required", got
    run_id = gw.run_of(task.status_message)
    assert gw.run(run_id)["status"] == "requires_action"
    # Another process approves it (and continues the run).
    approved = gw.cli("--tenant", "acme", "approve", run_id)
    assert approved.returncode == 0, approved.stderr
    # The next process reads it.
    async with stdio_client(gw.params("acme")) as (r, w):
        async with TaskSession(r, w) as s:
            await s.initialize()
            got = await s.get_task(task.task_id)
            assert got.status == "completed", got
            result = await s.task_result(task.task_id)
            assert not result.is_error and "kept.txt" in text_of(result), text_of(result)
            related = (result.meta or {}).get("io.modelcontextprotocol/related-task", {})
            assert related.get("taskId") == task.task_id, result.meta
            listed = await s.list_tasks()
            assert task.task_id in [t.task_id for t in listed.tasks], listed
    # (Each tenant's files are in its own folder of the workspace.)
    assert open(os.path.join(gw.workspace, "tenants", "acme", "kept.txt")).read() == "kept"
    out["survived"] = task.task_id


async def scenario_waits(gw, out):
    notes = []

    async def on_status(params):
        notes.append((params.task_id, params.status))

    # Part of the extension: the session drops `notifications/tasks/status` unless bound.
    status = NotificationBinding(
        method="notifications/tasks/status", params_type=types.TaskStatusNotificationParams, handler=on_status
    )
    async with stdio_client(gw.params("acme")) as (r, w):
        async with TaskSession(r, w, notification_bindings=[status]) as s:
            await s.initialize()
            created = await s.call_tool_as_task("write_file", {"path": "waited.txt", "content": "waited"})
            task = created.task
            run_id = gw.run_of(task.status_message)

            def approve_soon():
                time.sleep(1.0)
                gw.cli("--tenant", "acme", "approve", run_id)

            threading.Thread(target=approve_soon, daemon=True).start()
            started = time.monotonic()
            result = await s.task_result(task.task_id)
            waited = time.monotonic() - started
            assert waited >= 0.9, waited
            assert not result.is_error and "waited.txt" in text_of(result), text_of(result)
    statuses = [status for (task_id, status) in notes if task_id == task.task_id]
    assert statuses[0] == "input_required" and statuses[-1] == "completed", notes
    out["waited"] = round(waited, 2)
    out["notes"] = len(statuses)


async def scenario_other_tenant(gw, out):
    async with stdio_client(gw.params("globex")) as (r, w):
        async with TaskSession(r, w) as s:
            await s.initialize()
            try:
                await s.get_task(out["survived"])
                raise AssertionError("another tenant read the task")
            except MCPError as e:
                assert "no task" in str(e), e
            listed = await s.list_tasks()
            assert listed.tasks == [], listed


async def scenario_expires(gw, out):
    async with stdio_client(gw.params("acme")) as (r, w):
        async with TaskSession(r, w) as s:
            await s.initialize()
            created = await s.call_tool_as_task("write_file", {"path": "expired.txt", "content": "never"}, ttl=1000)
            task = created.task
            assert task.ttl == 1000, task
            run_id = gw.run_of(task.status_message)
            # The reaper looks every 2 s; a generous bound for liveness only.
            deadline = time.monotonic() + 30
            while gw.run(run_id)["status"] != "cancelled":
                assert time.monotonic() < deadline, gw.run(run_id)
                await anyio.sleep(0.2)
            try:
                await s.get_task(task.task_id)
                raise AssertionError("an expired task was read")
            except MCPError as e:
                assert "no task" in str(e), e
    refused = gw.cli("--tenant", "acme", "approve", run_id)
    assert refused.returncode != 0, refused.stdout
    assert not os.path.exists(os.path.join(gw.workspace, "tenants", "acme", "expired.txt"))
    out["expired_run"] = run_id


async def main(toolgate, db, agent, workspace):
    gw = Gateway(toolgate, db, agent, workspace)
    out = {}
    await scenario_survives(gw, out)
    await scenario_waits(gw, out)
    await scenario_other_tenant(gw, out)
    await scenario_expires(gw, out)
    print(json.dumps(out))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:5])
