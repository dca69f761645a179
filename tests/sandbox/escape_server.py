"""A tiny MCP server (the official SDK's MCPServer) whose one tool, `attempt`, tries an
escape of escape.py from inside the server process, for tests/sandbox.rs."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import escape  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402

app = MCPServer("escape")


@app.tool()
def attempt(request: str) -> str:
    """Tries the escape REQUEST (JSON: {"row": ..., arguments}) and says how it went."""
    return json.dumps(escape.attempt(json.loads(request)))


app.run()
