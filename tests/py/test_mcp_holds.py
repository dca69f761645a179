"""Held CONFIRM calls end with their MCP client (issue 31, point 1), against real
clients, unmodified. Run by tests/mcp_clients.rs:

    python test_mcp_holds.py agents BASE KEY
    python test_mcp_holds.py join BASE KEY

`agents`: the OpenAI Agents SDK's MCPServerStreamableHttp on its default 5 s client
timeout calls write_file (CONFIRM) on `keeper` (held up to 120 s): the SDK gives up, its
`notifications/cancelled` cancels the run, and a later approval is refused. Then on
`quick` (the gateway's default hold): whatever the SDK reports, the run ends without
running and cannot be approved later.

`join`: the official `mcp` SDK calls write_file on `joiner` twice with the same
arguments in one session; the second call joins the held run (its progress notifications name that run),
one approval answers both, and there is one run.

Every check is an assert; the last line printed is a JSON object the Rust test reads.
"""

import json
import sys
import time

import anyio
import httpx2


def is_error(result):
    """`is_error` in mcp 2.x, `isError` in the types the Agents SDK hands back."""
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def runs_of(client, base, agent):
    listed = (await client.get(f"{base}/v1/runs", params={"limit": 100})).json()
    return [r for r in listed if r["agent"] == agent]


async def wait_for(client, base, agent, predicate, what):
    """Polls the run list until `predicate(runs)`; a generous bound for liveness only."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        runs = await runs_of(client, base, agent)
        if predicate(runs):
            return runs
        await anyio.sleep(0.2)
    raise AssertionError(f"{what}: {await runs_of(client, base, agent)}")


async def agents_main(base, key):
    from agents.mcp import MCPServerStreamableHttp

    headers = {"Authorization": f"Bearer {key}"}
    out = {}
    async with httpx2.AsyncClient(headers=headers) as client:
        # keeper: held far longer than the SDK waits; only the client's going can end it.
        server = MCPServerStreamableHttp(
            params={"url": f"{base}/mcp/keeper", "headers": headers},
            name="toolgate-keeper",
        )
        assert server.client_session_timeout_seconds == 5, server.client_session_timeout_seconds
        async with server:
            names = [t.name for t in await server.list_tools()]
            assert "write_file" in names, names
            failed = None
            try:
                result = await server.call_tool(
                    "write_file", {"path": "agents_sdk.txt", "content": "must never be written"}
                )
                failed = f"returned: {text_of(result)}"
            except Exception as e:  # the SDK's own timeout error
                out["keeper_error"] = f"{type(e).__name__}: {e}"
            assert failed is None, f"the SDK should have given up: {failed}"
        runs = await wait_for(
            client,
            base,
            "keeper",
            lambda rs: len(rs) == 1 and rs[0]["status"] == "cancelled",
            "the held run was not cancelled after the SDK gave up",
        )
        run = runs[0]
        out["keeper_run"] = run["id"]
        late = await client.post(f"{base}/v1/runs/{run['id']}/approve", json={})
        assert late.status_code == 409, (late.status_code, late.text)
        out["keeper_late_approve"] = late.status_code

        # quick: the default hold, shorter than the SDK's timeout.
        async with MCPServerStreamableHttp(
            params={"url": f"{base}/mcp/quick", "headers": headers}, name="toolgate-quick"
        ) as server:
            try:
                result = await server.call_tool(
                    "write_file", {"path": "quick.txt", "content": "must never be written"}
                )
                assert is_error(result), text_of(result)
                out["quick_result"] = text_of(result)
            except Exception as e:
                out["quick_error"] = f"{type(e).__name__}: {e}"
        runs = await wait_for(
            client,
            base,
            "quick",
            lambda rs: len(rs) == 1 and rs[0]["status"] in ("completed", "cancelled"),
            "the quick run did not end",
        )
        run = runs[0]
        late = await client.post(f"{base}/v1/runs/{run['id']}/approve", json={})
        assert late.status_code == 409, (late.status_code, late.text)
        out["quick_run"] = run["id"]
        out["quick_status"] = run["status"]
    print(json.dumps(out))


async def join_main(base, key):
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"}
    args = {"path": "joined.txt", "content": "written once"}
    out = {"first": None, "second": None}
    joined = anyio.Event()
    seen = []

    async def second_progress(progress, total, message):
        seen.append(message or "")
        if message and "toolgate approve run_" in message:
            joined.set()

    async with httpx2.AsyncClient(headers=headers) as client:
        async with streamable_http_client(f"{base}/mcp/joiner", http_client=client) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()

                async def first():
                    out["first"] = await session.call_tool("write_file", args)

                async def second():
                    out["second"] = await session.call_tool(
                        "write_file", args, progress_callback=second_progress
                    )

                async with anyio.create_task_group() as tg:
                    tg.start_soon(first)
                    runs = await wait_for(
                        client,
                        base,
                        "joiner",
                        lambda rs: any(r["status"] == "requires_action" for r in rs),
                        "the first call was not held",
                    )
                    held = [r for r in runs if r["status"] == "requires_action"]
                    assert len(held) == 1, held
                    run_id = held[0]["id"]
                    tg.start_soon(second)
                    with anyio.fail_after(90):
                        await joined.wait()
                    assert any(run_id in m for m in seen), (run_id, seen)
                    done = await client.post(f"{base}/v1/runs/{run_id}/approve", json={})
                    assert done.status_code == 200, done.text
        for which in ("first", "second"):
            result = out[which]
            assert result is not None and not is_error(result), (which, result)
        runs = await runs_of(client, base, "joiner")
        writes = [r for r in runs if r["status"] != "cancelled"]
        assert len(writes) == 1, writes
        print(json.dumps({"run": run_id, "runs": len(writes), "progress": len(seen)}))


def main():
    mode, base, key = sys.argv[1:4]
    if mode == "agents":
        anyio.run(agents_main, base, key)
    elif mode == "join":
        anyio.run(join_main, base, key)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
