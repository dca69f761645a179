"""A FastAPI app that fails on purpose, serving its own OpenAPI document (/openapi.json),
for toolgate's retry tests (tests/tool_retries.rs). Usage: python flaky_api.py PORT.
Every request to /items/{key} is counted by key; the first `fail` of them answer
`status` (with `Retry-After: retry_after` when given), the next ones 200. /slow/{key}
sleeps `sleep` seconds on its first request only. /hits/{key} says how many requests a
key has had. /get?q= echoes its query as httpbin.org does (counted as `get`), for
the templates of `toolgate tools new` (tests/scaffold.rs). Nothing is written to disk."""
import sys
import time
from collections import Counter
from typing import Optional

import uvicorn
from fastapi import FastAPI, Query
from fastapi.responses import JSONResponse

app = FastAPI(title="Flaky", version="1.0.0")
HITS: Counter = Counter()


def answer(key: str, fail: int, status: int, retry_after: Optional[str]):
    HITS[key] += 1
    if HITS[key] <= fail:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return JSONResponse({"detail": f"failing on purpose ({HITS[key]})"}, status, headers)
    return {"key": key, "hits": HITS[key]}


@app.get("/items/{key}", operation_id="getItem", summary="Read an item")
def get_item(key: str, fail: int = 0, status: int = 503, retry_after: Optional[str] = None):
    return answer(key, fail, status, retry_after)


@app.post("/items/{key}", operation_id="postItem", summary="Write an item")
def post_item(key: str, fail: int = 0, status: int = 503):
    return answer(key, fail, status, None)


@app.get("/slow/{key}", operation_id="getSlow", summary="Slow the first time")
def get_slow(key: str, sleep: float = Query(default=0.0)):
    HITS[key] += 1
    if HITS[key] == 1:
        time.sleep(sleep)
    return {"key": key, "hits": HITS[key]}


@app.get("/get", operation_id="echoQuery", summary="Echo the query, as httpbin.org/get")
def echo_query(q: str):
    HITS["get"] += 1
    return {"args": {"q": q}}


@app.get("/hits/{key}", operation_id="getHits", summary="Requests a key has had")
def get_hits(key: str):
    return {"key": key, "hits": HITS[key]}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
