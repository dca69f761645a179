"""A small MCP server (stdio, the official `mcp` SDK) whose tool schema uses anyOf,
$ref/$defs and const, as pydantic writes them: toolgate must check such schemas fully."""
from typing import Literal, Optional, Union

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

server = MCPServer("schemas")


class When(BaseModel):
    hour: int
    zone: Literal["UTC"]


@server.tool()
def book(room: Union[int, str], when: Optional[When] = None) -> str:
    """Book a room (a number or a name), optionally at a time."""
    at = f" at {when.hour}:00 {when.zone}" if when else ""
    return f"booked {room}{at}"


if __name__ == "__main__":
    server.run()
