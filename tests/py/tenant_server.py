"""A tiny MCP server (the official SDK's MCPServer) for the tenant walls test: `where`
says which process answers, in which folder, with which token (a digest of it); `nap` sleeps (a call to
kill toolgate in the middle of)."""

import hashlib
import json
import os
import time

from mcp.server.mcpserver import MCPServer

app = MCPServer("tenant")


@app.tool()
def where() -> str:
    """Says which process answers, its folder and its token."""
    with open("mine.txt", "a") as f:
        f.write("here\n")
    return json.dumps(
        {
            "pid": os.getpid(),
            "cwd": os.getcwd(),
            # A digest: toolgate masks a credential's value in what a tool answers.
            "token": hashlib.sha256(
                os.environ.get("TENANT_TOKEN", "").encode()
            ).hexdigest()[:16],
            "files": sorted(os.listdir(".")),
        }
    )


@app.tool()
def nap() -> str:
    """Sleeps half a minute."""
    with open("napping.txt", "w") as f:
        f.write("napping\n")
    time.sleep(30)
    return "rested"


app.run()
