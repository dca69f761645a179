"""A small MCP server (stdio, the official `mcp` SDK) for toolgate's tests: `book`, whose
schema uses anyOf, $ref/$defs and const as pydantic writes them (toolgate must check
such schemas fully), and `wait`, which notes in cancelled.txt (in the working folder)
that the client cancelled it."""
from typing import Literal, Optional, Union

import anyio
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

server = MCPServer("rooms")


class When(BaseModel):
    hour: int
    zone: Literal["UTC"]


@server.tool()
def book(room: Union[int, str], when: Optional[When] = None) -> str:
    """Book a room (a number or a name), optionally at a time."""
    at = f" at {when.hour}:00 {when.zone}" if when else ""
    return f"booked {room}{at}"


@server.tool()
async def wait(seconds: float) -> str:
    """Wait for a number of seconds."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        with open("cancelled.txt", "w") as f:
            f.write("cancelled\n")
        raise
    return "waited"


if __name__ == "__main__":
    server.run()
