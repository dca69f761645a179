"""Per-call latency of an MCP client calling a tool through `toolgate mcp`, against a
floor: the same client calling a trivial tool on a minimal Python MCP server (the SDK's
own MCPServer, formerly FastMCP), in the same run. Three rows:

- `toolgate mcp (echo)`: the gateway running its built-in echo;
- `toolgate mcp -> stdio server`: the gateway calling the floor server's echo, declared
  as an MCP tool source (client -> gateway -> stdio server);
- `python MCPServer (echo)`: the client calling the floor server directly.

    bash tests/py/setup.sh                     # the venv with the `mcp` package
    cargo build                                # or --release for release figures
    target/pyenv/bin/python examples/mcp_latency.py target/debug/toolgate [CALLS]

Each call through toolgate is a single-call run: gated, run by the engine, and its run
and call record committed to SQLite before the result goes back. The database is a
fresh one in a temporary folder. Prints one JSON line per server: p50, p95, mean (ms).
"""

import json
import os
import statistics
import sys
import tempfile
import time

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

FLOOR_SERVER = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("floor")


@server.tool()
def echo(text: str) -> str:
    return text


server.run()
"""


async def measure(params, calls, label, tool="echo"):
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            for _ in range(20):  # warm-up
                await session.call_tool(tool, {"text": "warm"})
            times = []
            for i in range(calls):
                t0 = time.perf_counter()
                result = await session.call_tool(tool, {"text": f"call {i}"})
                times.append((time.perf_counter() - t0) * 1000)
                assert not result.is_error, result
    times.sort()
    row = {
        "server": label,
        "calls": calls,
        "p50_ms": round(statistics.median(times), 3),
        "p95_ms": round(times[int(len(times) * 0.95) - 1], 3),
        "mean_ms": round(statistics.fmean(times), 3),
    }
    print(json.dumps(row), flush=True)
    return row


async def main(toolgate, calls):
    with tempfile.TemporaryDirectory() as tmp:
        agent = os.path.join(tmp, "agent.yaml")
        with open(agent, "w") as f:
            f.write("name: bench\ninstructions: Echo.\ntools: [echo]\n")
        floor = os.path.join(tmp, "floor.py")
        with open(floor, "w") as f:
            f.write(FLOOR_SERVER)
        gateway = StdioServerParameters(
            command=toolgate,
            args=["mcp", "--agent", agent, "--db", os.path.join(tmp, "bench.db")],
            cwd=tmp,
        )
        tools = os.path.join(tmp, "tools")
        os.mkdir(tools)
        with open(os.path.join(tools, "floor.yaml"), "w") as f:
            f.write(
                f"mcp_server: floor\ncommand: {json.dumps(sys.executable)}\n"
                f"args: [{json.dumps(floor)}]\npermission: auto\n"
            )
        proxied = os.path.join(tmp, "proxied.yaml")
        with open(proxied, "w") as f:
            f.write("name: proxied\ninstructions: Echo.\ntools: [floor__echo]\n")
        proxy = StdioServerParameters(
            command=toolgate,
            args=["mcp", "--agent", proxied, "--tools", tools,
                  "--db", os.path.join(tmp, "proxy.db")],
            cwd=tmp,
        )
        python = StdioServerParameters(command=sys.executable, args=[floor], cwd=tmp)
        through = await measure(gateway, calls, "toolgate mcp (echo)")
        chained = await measure(proxy, calls, "toolgate mcp -> stdio server", "floor__echo")
        base = await measure(python, calls, "python MCPServer (echo)")
        print(
            json.dumps(
                {
                    "gateway_overhead_p50_ms": round(through["p50_ms"] - base["p50_ms"], 3),
                    "chain_overhead_p50_ms": round(chained["p50_ms"] - base["p50_ms"], 3),
                    "chain_over_direct_p50": round(chained["p50_ms"] / base["p50_ms"], 2),
                    "chain_overhead_mean_ms": round(chained["mean_ms"] - base["mean_ms"], 3),
                }
            )
        )


if __name__ == "__main__":
    anyio.run(main, os.path.abspath(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 500)
