"""A small MCP server (stdio, the official `mcp` SDK) for toolgate's retry tests: each of
its tools drops the connection (the process exits mid-call) the first time it is called
in a working folder, noting that in dropped-<tool>.txt, and answers from then on.
`lookup` is read-only (annotations), `store` is not."""
import os

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("dropping")


def drop_once(tool: str) -> None:
    mark = f"dropped-{tool}.txt"
    if not os.path.exists(mark):
        with open(mark, "w") as f:
            f.write(f"{os.getpid()}\n")
        os._exit(1)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup(key: str) -> str:
    """Look a key up (read-only)."""
    drop_once("lookup")
    return f"found {key} in process {os.getpid()}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
def store(key: str) -> str:
    """Store a key (a write)."""
    drop_once("store")
    return f"stored {key}"


if __name__ == "__main__":
    server.run()
