"""A tiny MCP server (the official SDK's MCPServer) for the credential-check test: it
checks VAULT_TOKEN when it starts: with a wrong one it says so on stderr, quoting the
token (as careless servers do), and exits before initialize. Without one it starts, for
discovery only (toolgate lists a server's tools without credentials when it loads)."""

import os
import sys

from mcp.server.mcpserver import MCPServer

token = os.environ.get("VAULT_TOKEN", "")
if token and token != "good-key-5d1e90":
    print("token %s refused by the vault" % token, file=sys.stderr, flush=True)
    sys.exit(1)

app = MCPServer("vault")


@app.tool()
def peek() -> str:
    """Peeks into the vault."""
    return "peeked"


app.run()
