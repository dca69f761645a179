"""A workflow tool called through `toolgate mcp` by the official `mcp` Python SDK,
unmodified: the workflow's CONFIRM step is put to the client as an elicitation, the
client accepts, and the call answers with the workflow's output. Run by
tests/workflows.rs:

    python mcp_workflow.py TOOLGATE DB AGENT TOOLS WORKSPACE

Every check is an assert; the last line printed is a JSON object.
"""

import json
import sys

import anyio
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main(toolgate, db, agent, tools, workspace):
    asked = []

    async def answer(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})

    params = StdioServerParameters(
        command=toolgate,
        args=["mcp", "--agent", agent, "--tools", tools, "--workspace", workspace,
              "--db", db, "--approval-timeout", "60s"],
        env={"TOOLGATE_DB": db},
    )
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w, elicitation_callback=answer) as session:
            await session.initialize()
            listed = {t.name for t in (await session.list_tools()).tools}
            assert listed == {"weather_launch"}, listed
            result = await session.call_tool("weather_launch", {"city": "Oslo"})
            assert not result.is_error, text_of(result)
            assert text_of(result) == "launched: Oslo is 4 C", text_of(result)
            failed = await session.call_tool("weather_launch", {"city": "Atlantis"})
            assert failed.is_error, text_of(failed)
            assert "step 1 of 2 (lookup) failed" in text_of(failed), text_of(failed)
    assert len(asked) == 1 and "launch" in asked[0], asked
    print(json.dumps({"asked": asked, "answer": text_of(result)}))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:6])
