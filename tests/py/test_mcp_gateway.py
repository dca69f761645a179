"""The MCP gateway (`toolgate mcp`, `/mcp/{agent}` of `toolgate serve`) driven by the
official `mcp` Python SDK, unmodified. Run by tests/mcp_gateway.rs:

    python test_mcp_gateway.py stdio TOOLGATE DB AGENT TOOLS WORKSPACE
    python test_mcp_gateway.py http URL KEY

Every check is an assert; the last line printed is a JSON object the Rust test reads
(the conversation ids and call outcomes it then looks up in `toolgate calls --json`).
"""

import json
import os
import subprocess
import sys

import anyio
import httpx2
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


class Stdio:
    """`toolgate mcp` for one agent, with one approval timeout."""

    def __init__(self, toolgate, db, agent, tools, workspace):
        self.toolgate, self.db, self.agent, self.tools, self.workspace = (
            toolgate,
            db,
            agent,
            tools,
            workspace,
        )

    def params(self, approval_timeout):
        return StdioServerParameters(
            command=self.toolgate,
            args=[
                "mcp",
                "--agent",
                self.agent,
                "--tools",
                self.tools,
                "--workspace",
                self.workspace,
                "--db",
                self.db,
                "--approval-timeout",
                approval_timeout,
            ],
            env={"TOOLGATE_DB": self.db},
        )

    def cli(self, *args):
        """Another process: the toolgate command line on the same database."""
        out = subprocess.run(
            [self.toolgate, "--db", self.db, *args], capture_output=True, text=True
        )
        return out


async def check_listing(session):
    listed = await session.list_tools()
    tools = {t.name: t for t in listed.tools}
    # shell (never) and ask_user (definition-only) are not served.
    assert set(tools) == {"echo", "calculator", "read_file", "write_file"}, sorted(tools)
    calc = tools["calculator"]
    assert "expression" in calc.input_schema["properties"], calc.input_schema
    assert calc.annotations is not None and calc.annotations.read_only_hint is True
    write = tools["write_file"]
    assert write.annotations is None or not write.annotations.read_only_hint
    assert (write.meta or {}).get("toolgate/permission") == "confirm", write.meta
    return sorted(tools)


async def scenario_auto_and_errors(gw, out):
    async with stdio_client(gw.params("60s")) as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            out["listed"] = await check_listing(session)

            result = await session.call_tool("calculator", {"expression": "2+3*4"})
            assert not result.is_error, text_of(result)
            assert "14" in text_of(result), text_of(result)

            result = await session.call_tool("echo", {"text": "hello gateway"})
            assert not result.is_error and "hello gateway" in text_of(result), text_of(result)

            result = await session.call_tool("calculator", {})
            assert result.is_error, text_of(result)
            assert "expression" in text_of(result), text_of(result)

            result = await session.call_tool("no_such_tool", {"x": 1})
            assert result.is_error and "no_such_tool" in text_of(result), text_of(result)

            result = await session.call_tool("shell", {"command": "echo pwned > pwned.txt"})
            assert result.is_error, text_of(result)
            assert "never" in text_of(result), text_of(result)

            result = await session.call_tool("ask_user", {"question": "Colour?"})
            assert result.is_error and "client tool" in text_of(result), text_of(result)

            result = await session.call_tool("calculator", {"expression": "1/0"})
            assert result.is_error, text_of(result)
    assert not os.path.exists(os.path.join(gw.workspace, "pwned.txt"))


async def scenario_elicitation(gw, out):
    asked = []

    async def answer(context, params):
        asked.append(params.message)
        # The first request is accepted, the second declined.
        action = "accept" if len(asked) == 1 else "decline"
        return types.ElicitResult(action=action, content={} if action == "accept" else None)

    async with stdio_client(gw.params("60s")) as (r, w):
        async with ClientSession(r, w, elicitation_callback=answer) as session:
            await session.initialize()
            result = await session.call_tool(
                "write_file", {"path": "accepted.txt", "content": "yes"}
            )
            assert not result.is_error, text_of(result)
            result = await session.call_tool(
                "write_file", {"path": "declined.txt", "content": "no"}
            )
            assert result.is_error, text_of(result)
            assert "declined" in text_of(result), text_of(result)
    assert len(asked) == 2, asked
    assert "write_file" in asked[0] and "accepted.txt" in asked[0], asked[0]
    assert "call_mcp_" in asked[0] and "run_" in asked[0], asked[0]
    with open(os.path.join(gw.workspace, "accepted.txt")) as f:
        assert f.read() == "yes"
    assert not os.path.exists(os.path.join(gw.workspace, "declined.txt"))
    out["elicitation_messages"] = asked


async def scenario_held_and_approved(gw, out):
    """No elicitation: the call waits as a run requiring action; another process
    approves it while the SDK's call is still waiting."""
    approved = {}

    async def approve_from_elsewhere():
        for _ in range(300):
            listed = gw.cli("runs", "--status", "requires_action", "--json")
            assert listed.returncode == 0, listed.stderr
            runs = json.loads(listed.stdout)
            if runs:
                run = runs[0]
                items = run["required_action"]["items"]
                assert items[0]["tool"] == "write_file", items
                assert items[0]["arguments"]["path"] == "held.txt", items
                done = gw.cli("approve", run["id"])
                approved["run"] = run["id"]
                approved["approve_exit"] = done.returncode
                approved["approve_stderr"] = done.stderr
                return
            await anyio.sleep(0.1)
        raise AssertionError("no run waited for approval")

    async with stdio_client(gw.params("120s")) as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            async with anyio.create_task_group() as tg:
                tg.start_soon(approve_from_elsewhere)
                result = await session.call_tool(
                    "write_file", {"path": "held.txt", "content": "approved later"}
                )
            assert not result.is_error, text_of(result)
    assert approved.get("approve_exit") == 0, approved
    with open(os.path.join(gw.workspace, "held.txt")) as f:
        assert f.read() == "approved later"
    shown = gw.cli("show", approved["run"], "--json")
    assert json.loads(shown.stdout)["status"] == "completed", shown.stdout
    out["held_run"] = approved["run"]


async def scenario_held_and_timed_out(gw, out):
    async with stdio_client(gw.params("2s")) as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            result = await session.call_tool(
                "write_file", {"path": "late.txt", "content": "too late"}
            )
            assert result.is_error, text_of(result)
            assert "not approved in time" in text_of(result), text_of(result)
            # The session goes on: its conversation is free again.
            result = await session.call_tool("echo", {"text": "after the timeout"})
            assert not result.is_error, text_of(result)
    assert not os.path.exists(os.path.join(gw.workspace, "late.txt"))
    pending = json.loads(gw.cli("runs", "--status", "requires_action", "--json").stdout)
    assert pending == [], pending


async def scenario_held_then_gateway_gone(gw, out):
    """The client (and with it the gateway process) goes away while a call is held: the
    held call ends with it. Its run is cancelled and the call recorded `cancelled`; an
    approval from another process later is refused and the call never runs."""
    run_id = None
    async with stdio_client(gw.params("120s")) as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    session.call_tool,
                    "write_file",
                    {"path": "restart.txt", "content": "must not run later"},
                )
                for _ in range(300):
                    runs = json.loads(
                        gw.cli("runs", "--status", "requires_action", "--json").stdout
                    )
                    if runs:
                        run_id = runs[0]["id"]
                        break
                    await anyio.sleep(0.1)
                tg.cancel_scope.cancel()
    assert run_id, "no run waited for approval"
    shown = {}
    for _ in range(300):
        shown = json.loads(gw.cli("show", run_id, "--json").stdout)
        if shown["status"] != "requires_action":
            break
        await anyio.sleep(0.1)
    assert shown["status"] == "cancelled", shown
    done = gw.cli("approve", run_id)
    assert done.returncode != 0, (done.returncode, done.stdout)
    assert not os.path.exists(os.path.join(gw.workspace, "restart.txt"))
    out["restart_run"] = run_id


async def stdio_main(toolgate, db, agent, tools, workspace):
    gw = Stdio(toolgate, db, agent, tools, workspace)
    out = {}
    await scenario_auto_and_errors(gw, out)
    await scenario_elicitation(gw, out)
    await scenario_held_and_approved(gw, out)
    await scenario_held_and_timed_out(gw, out)
    await scenario_held_then_gateway_gone(gw, out)
    print(json.dumps(out))


async def http_main(url, key):
    out = {}
    # Without the key: 401 before any MCP happens.
    async with httpx2.AsyncClient() as plain:
        response = await plain.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            headers={"Accept": "application/json, text/event-stream"},
        )
        assert response.status_code == 401, (response.status_code, response.text)
        out["without_key"] = response.status_code
        response = await plain.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            headers={
                "Accept": "application/json, text/event-stream",
                "Authorization": "Bearer wrong",
            },
        )
        assert response.status_code == 401, (response.status_code, response.text)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers) as client:
        async with streamable_http_client(url, http_client=client) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                out["listed"] = await check_listing(session)
                result = await session.call_tool("calculator", {"expression": "6*7"})
                assert not result.is_error and "42" in text_of(result), text_of(result)
                result = await session.call_tool("shell", {"command": "ls"})
                assert result.is_error and "never" in text_of(result), text_of(result)

        # CONFIRM asked through elicitation, over the session's SSE stream.
        asked = []

        async def accept(context, params):
            asked.append(params.message)
            return types.ElicitResult(action="accept", content={})

        async with streamable_http_client(url, http_client=client) as (r, w):
            async with ClientSession(r, w, elicitation_callback=accept) as session:
                await session.initialize()
                result = await session.call_tool(
                    "write_file", {"path": "over_http.txt", "content": "elicited"}
                )
                assert not result.is_error, text_of(result)
        assert len(asked) == 1 and "over_http.txt" in asked[0], asked

        # CONFIRM held, then denied through the HTTP run API while the call waits.
        base = url.split("/mcp/")[0]
        denied = {}

        async def deny_through_the_api():
            for _ in range(300):
                runs = (
                    await client.get(f"{base}/v1/runs", params={"status": "requires_action"})
                ).json()
                if runs:
                    item = runs[0]["required_action"]["items"][0]
                    response = await client.post(
                        f"{base}/v1/runs/{runs[0]['id']}/deny",
                        json={"call_id": item["call_id"], "reason": "not through the API"},
                    )
                    denied["status"] = response.status_code
                    return
                await anyio.sleep(0.1)
            raise AssertionError("no run waited for approval")

        async with streamable_http_client(url, http_client=client) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(deny_through_the_api)
                    result = await session.call_tool(
                        "write_file", {"path": "never_written.txt", "content": "no"}
                    )
                assert result.is_error, text_of(result)
                assert "not through the API" in text_of(result), text_of(result)
        assert denied.get("status") == 200, denied
    print(json.dumps(out))


def main():
    mode = sys.argv[1]
    if mode == "stdio":
        anyio.run(stdio_main, *sys.argv[2:7])
    elif mode == "http":
        anyio.run(http_main, *sys.argv[2:4])
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
