"""A run driven by the Python client openapi-python-client generated from toolgate's
own /openapi.json (tests/openapi_clients.rs generates it, then runs this):

    python openapi_client_run.py PARENT_DIR BASE_URL KEY

PARENT_DIR holds the generated package `toolgate_client`. The `assistant` agent of the
serving helper (crates/toolgate-test-support/src/serving) runs calculator at once, then
pauses on write_file (approval) and ask_user (the client's output): this script starts
the run, approves, submits, and gets the run, each through the generated functions and
models. Every check is an assert; the last line is a JSON object the Rust test reads.
"""

import json
import sys

sys.path.insert(0, sys.argv[1])

from toolgate_client import AuthenticatedClient  # noqa: E402
from toolgate_client.api.decisions import approve, submit  # noqa: E402
from toolgate_client.api.runs import create_run, get_run  # noqa: E402
from toolgate_client.models import (  # noqa: E402
    ApproveBody,
    CreateRun,
    RunObject,
    SubmitBody,
)


def main(base, key):
    client = AuthenticatedClient(base_url=base, token=key)
    started = create_run.sync(
        client=client, body=CreateRun(agent="assistant", input_="Work out 2+3*4")
    )
    assert isinstance(started, RunObject), started
    status = started.status.value if hasattr(started.status, "value") else started.status
    assert status == "requires_action", started
    items = started.required_action.items
    kinds = sorted(
        (i.kind.value if hasattr(i.kind, "value") else i.kind, i.call_id) for i in items
    )
    assert kinds == [("approval", "call_write"), ("submit_tool_output", "call_ask")], kinds
    write = next(i for i in items if i.call_id == "call_write")
    # Arguments are a JSON object (a dict), not an opaque value.
    assert write.arguments.to_dict()["path"] == "result.txt", write.arguments

    approved = approve.sync(
        started.id, client=client, body=ApproveBody(call_id="call_write")
    )
    assert isinstance(approved, RunObject), approved
    submitted = submit.sync(
        started.id, client=client, body=SubmitBody(call_id="call_ask", output="blue")
    )
    assert isinstance(submitted, RunObject), submitted
    got = get_run.sync(started.id, client=client)
    assert isinstance(got, RunObject), got
    status = got.status.value if hasattr(got.status, "value") else got.status
    assert status == "completed", got
    print(json.dumps({"run": got.id, "status": status, "output": got.output}))


if __name__ == "__main__":
    main(sys.argv[2], sys.argv[3])
