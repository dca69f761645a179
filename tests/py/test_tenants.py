"""Tenant isolation through the official SDKs, unmodified: the `openai` package against
the Responses endpoint and the `mcp` package against `/mcp/{agent}`, each with the keys
of two tenants. Run by tests/tenants_sdk.rs:

    python test_tenants.py URL A_CLIENT B_CLIENT A_APPROVER

Every check is an assert; the last line printed is a JSON object the Rust test reads.
"""

import json
import sys

import anyio
import httpx2
import openai
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from openai import OpenAI


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def responses(url, a_key, b_key):
    a = OpenAI(base_url=f"{url}/v1", api_key=a_key, max_retries=0, timeout=60)
    b = OpenAI(base_url=f"{url}/v1", api_key=b_key, max_retries=0, timeout=60)
    ours = a.responses.create(model="agent:plain", input="Hello")
    theirs = b.responses.create(model="agent:plain", input="Hello")
    assert a.responses.retrieve(ours.id).id == ours.id
    # B's response is not found for A, exactly as an unknown id.
    for rid in (theirs.id, "resp_" + "0" * 32):
        try:
            a.responses.retrieve(rid)
        except openai.NotFoundError as e:
            assert e.status_code == 404
        else:
            raise AssertionError(f"A read {rid}")
    # Nor can A continue it.
    try:
        a.responses.create(model="agent:plain", input="More", previous_response_id=theirs.id)
    except openai.NotFoundError:
        pass
    else:
        raise AssertionError("A continued B's response")
    return {"a_response": ours.id, "b_response": theirs.id}


async def mcp(url, a_key, b_key, approver_key):
    out = {}
    endpoint = f"{url}/mcp/assistant"
    for name, key in (("a", a_key), ("b", b_key)):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as client:
            async with streamable_http_client(endpoint, http_client=client) as (r, w):
                async with ClientSession(r, w) as session:
                    await session.initialize()
                    listed = sorted(t.name for t in (await session.list_tools()).tools)
                    assert "calculator" in listed and "ask_user" not in listed, listed
                    result = await session.call_tool("calculator", {"expression": "6*7"})
                    assert not result.is_error and "42" in text_of(result), text_of(result)
                    out[f"{name}_tools"] = listed
    # An approver key does not reach the gateway at all.
    async with httpx2.AsyncClient() as plain:
        response = await plain.post(
            endpoint,
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            headers={
                "Accept": "application/json, text/event-stream",
                "Authorization": f"Bearer {approver_key}",
            },
        )
        assert response.status_code == 403, (response.status_code, response.text)
    return out


def main():
    url, a_key, b_key, approver_key = sys.argv[1:5]
    out = responses(url, a_key, b_key)
    out.update(anyio.run(mcp, url, a_key, b_key, approver_key))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
