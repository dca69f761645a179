"""A tiny MCP server (the official SDK's MCPServer) for the hot-reload test: writes its
pid to the file named by its first argument, and answers `now` with that file's name."""

import os
import sys

from mcp.server.mcpserver import MCPServer

PIDFILE = sys.argv[1]
with open(PIDFILE, "w") as f:
    f.write(str(os.getpid()))

app = MCPServer("clock")


@app.tool()
def now() -> str:
    """Says which declaration started this server."""
    return "tick " + os.path.basename(PIDFILE)


app.run()
