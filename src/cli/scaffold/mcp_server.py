"""A minimal MCP server on stdio (JSON-RPC, one message per line): one tool, `echo`.

Written without the MCP SDK so that it runs with python3 alone; for a real server,
`pip install mcp` and use FastMCP, which speaks the same protocol.
"""

import json
import sys

TOOLS = [
    {
        "name": "echo",
        "title": "Echo",
        "description": "Says a text back in capitals.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to say back"}},
            "required": ["text"],
        },
        "annotations": {"readOnlyHint": True},
    }
]


def answer(request):
    method = request.get("method")
    if method == "initialize":
        return {
            "protocolVersion": request["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "{{name}}", "version": "0.1.0"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        text = request["params"].get("arguments", {}).get("text", "")
        return {"content": [{"type": "text", "text": text.upper()}], "isError": False}
    if method == "ping":
        return {}
    raise LookupError(method)


for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue  # a notification
    try:
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}
    except LookupError as e:
        reply = {"jsonrpc": "2.0", "id": request["id"],
                 "error": {"code": -32601, "message": "no method %s" % e}}
    print(json.dumps(reply), flush=True)
