"""`toolgate mcp` picks up edits of its tools folder while a client is connected, driven
by the official `mcp` Python SDK. Run by tests/hot_reload.rs:

    python test_hot_reload.py TOOLGATE DB AGENT TOOLS WORKSPACE ERRLOG

The tools folder holds greet.yaml (a final-less command tool) and clock.yaml (an MCP
server declaration running clock_server.py). Edits: greet v1 -> v2 (the client is told
tools/list_changed and the next call runs v2), greet broken (the call still runs v2),
clock's declaration changed (the next call reaches a new server; the old one stops).
Every check is an assert; the last line printed is a JSON summary.
"""

import json
import os
import sys
import time

import anyio
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

toolgate, db, agent, tools, workspace, errlog = sys.argv[1:7]
here = os.path.dirname(os.path.abspath(__file__))

GREET = """name: greet
description: Greets.
permission: auto
entry:
  type: command
  command: sh
  args: [-c, "echo hello {v}"]
"""


def clock(pidfile):
    return f"""mcp_server: clock
command: {sys.executable}
args: [{os.path.join(here, "clock_server.py")}, {pidfile}]
permission: auto
sandbox: {{write: [{os.path.dirname(pidfile)}]}}
"""


def write(name, text):
    # Written aside and renamed: the folder never holds half a file.
    path = os.path.join(tools, name)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose: it no longer runs.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def main():
    changed = anyio.Event()
    notices = {"list_changed": 0}

    async def on_message(message):
        nonlocal changed
        if isinstance(message, types.ToolListChangedNotification):
            notices["list_changed"] += 1
            changed.set()

    async def edited(name, text):
        """Writes a file and waits (at most 20 s) for the client to be told."""
        nonlocal changed
        changed = anyio.Event()
        write(name, text)
        with anyio.fail_after(20):
            await changed.wait()

    params = StdioServerParameters(
        command=toolgate,
        args=["mcp", "--agent", agent, "--tools", tools, "--workspace", workspace,
              "--db", db, "--reload-every", "200ms"],
        env={"TOOLGATE_DB": db, "PATH": os.environ.get("PATH", "")},
    )
    with open(errlog, "w") as err:
        async with stdio_client(params, errlog=err) as (r, w):
            async with ClientSession(r, w, message_handler=on_message) as session:
                await session.initialize()
                listed = sorted(t.name for t in (await session.list_tools()).tools)
                assert listed == ["clock__now", "greet"], listed
                first = text_of(await session.call_tool("greet", {}))
                assert first == "hello v1", first
                tick1 = text_of(await session.call_tool("clock__now", {}))
                assert tick1.endswith("tick pid1"), tick1

                await edited("greet.yaml", GREET.format(v="v2"))
                second = text_of(await session.call_tool("greet", {}))
                assert second == "hello v2", second

                await edited("greet.yaml", "name: greet\ndescription: [broken\n")
                third = text_of(await session.call_tool("greet", {}))
                assert third == "hello v2", f"a broken edit must keep v2: {third}"

                old_pid = int(open(os.path.join(workspace, "pid1")).read())
                assert alive(old_pid)
                await edited("clock.yaml", clock(os.path.join(workspace, "pid2")))
                tick2 = text_of(await session.call_tool("clock__now", {}))
                assert tick2.endswith("tick pid2"), tick2
                deadline = time.monotonic() + 20
                while alive(old_pid) and time.monotonic() < deadline:
                    await anyio.sleep(0.1)
                assert not alive(old_pid), "the server of the old declaration still runs"
                listed = sorted(t.name for t in (await session.list_tools()).tools)
                assert listed == ["clock__now", "greet"], listed
    print(json.dumps({"calls": [first, tick1, second, third, tick2], **notices}))


anyio.run(main)
