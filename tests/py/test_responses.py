"""toolgate's Responses-compatible endpoint, driven by the official, unmodified `openai`
Python package: responses created whole and streamed (the `client.responses.stream`
helper and `stream=True`), an AUTO call shown as `mcp_call`, a CONFIRM call approved
through `mcp_approval_response` and another denied, a client tool answered with
`function_call_output`, continuation with `previous_response_id`, `retrieve` (also with
`stream=True`), `cancel`, `delete`, and the errors the SDK raises for bad requests.

Run by tests/openai_sdk.rs against a `toolgate serve` on the agents in
tests/fixtures/responses/. Environment:
  TOOLGATE_BASE_URL        http://127.0.0.1:PORT/v1
  TOOLGATE_API_KEY         the server's key (any string when it has none)
  TOOLGATE_WORKSPACE       the server's --workspace, to check what write_file did
  TOOLGATE_RESPONSES_OUT   a file to write the final responses to (JSON: id -> object),
                           which the Rust side reads back after restarting the server
"""

import json
import os
import sys
import unittest

import openai
from openai import OpenAI
from openai.types.responses import ResponseReasoningItem

BASE_URL = os.environ["TOOLGATE_BASE_URL"]
API_KEY = os.environ.get("TOOLGATE_API_KEY", "none")
WORKSPACE = os.environ["TOOLGATE_WORKSPACE"]
OUT = os.environ.get("TOOLGATE_RESPONSES_OUT")

# Every final response a test saw, for the check after a restart.
SEEN = {}


def client():
    return OpenAI(base_url=BASE_URL, api_key=API_KEY, max_retries=0, timeout=60)


def keep(response):
    SEEN[response.id] = response.model_dump(mode="json", exclude_none=False)
    return response


def items(response, kind):
    return [o for o in response.output if o.type == kind]


class Lifecycle(unittest.TestCase):
    """Checks the stream events of one response, as a client reading them would."""

    def check_sequence(self, events):
        types = [e.type for e in events]
        self.assertEqual(types[0], "response.created", types)
        self.assertEqual(types[1], "response.in_progress", types)
        self.assertIn(types[-1], ("response.completed", "response.failed", "response.incomplete"), types)
        numbers = [e.sequence_number for e in events]
        self.assertEqual(numbers, list(range(len(events))), "sequence numbers count up from 0")
        ids = {e.response.id for e in events if e.type.startswith("response.") and hasattr(e, "response")}
        self.assertEqual(len(ids), 1, "one response id throughout")
        # Every item added is done, at the same index, before the response ends.
        added = {e.output_index: e.item.type for e in events if e.type == "response.output_item.added"}
        done = {e.output_index: e.item.type for e in events if e.type == "response.output_item.done"}
        self.assertEqual(added, done)
        # Message text: part added, deltas, text done, part done, in that order.
        for index, kind in added.items():
            if kind != "message":
                continue
            mine = [e.type for e in events if getattr(e, "output_index", None) == index]
            self.assertEqual(mine[0], "response.output_item.added")
            self.assertEqual(mine[1], "response.content_part.added")
            self.assertEqual(mine[-3:], ["response.output_text.done", "response.content_part.done", "response.output_item.done"])
            deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta" and e.output_index == index)
            text = [e.text for e in events if e.type == "response.output_text.done" and e.output_index == index][0]
            self.assertEqual(deltas, text)
        return types


class AutoCall(Lifecycle):
    def test_create_runs_the_calculator_server_side_as_an_mcp_call(self):
        c = client()
        r = keep(c.responses.create(model="agent:helper", input="What is 2+3*4?"))
        self.assertTrue(r.id.startswith("resp_"), r.id)
        self.assertEqual(r.object, "response")
        self.assertEqual(r.status, "completed")
        self.assertEqual(r.model, "agent:helper")
        self.assertEqual([o.type for o in r.output], ["message", "mcp_call", "message"])
        call = r.output[1]
        self.assertEqual((call.server_label, call.name, call.status), ("toolgate", "calculator", "completed"))
        self.assertEqual(json.loads(call.arguments), {"expression": "2+3*4"})
        self.assertEqual(call.output, "14")
        self.assertIsNone(call.error)
        self.assertEqual(r.output_text, "Let me work that out.2+3*4 is 14.")
        self.assertEqual(r.output[2].content[0].text, "2+3*4 is 14.")
        self.assertEqual((r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens), (120, 18, 138))
        self.assertEqual(r.usage.input_tokens_details.cached_tokens, 0)
        self.assertIsNone(r.error)
        self.assertIsNone(r.previous_response_id)

        # A new message continues the conversation in a new run.
        follow = keep(c.responses.create(model="agent:helper", input="Thanks!", previous_response_id=r.id))
        self.assertEqual(follow.status, "completed")
        self.assertEqual(follow.previous_response_id, r.id)
        self.assertEqual(follow.output_text, "You are welcome; 14 it stays.")
        self.assertEqual(follow.metadata["toolgate_conversation_id"], r.metadata["toolgate_conversation_id"])
        self.assertNotEqual(follow.metadata["toolgate_run_id"], r.metadata["toolgate_run_id"])

        got = c.responses.retrieve(r.id)
        self.assertEqual(got.model_dump(), r.model_dump())

    def test_the_stream_helper_accepts_the_event_sequence(self):
        c = client()
        with c.responses.stream(model="agent:helper", input="What is 2+3*4?") as stream:
            events = list(stream)
            final = keep(stream.get_final_response())
        types = self.check_sequence(events)
        self.assertEqual(types[-1], "response.completed")
        self.assertIn("response.output_text.delta", types)
        for kind in ("response.mcp_call.in_progress", "response.mcp_call_arguments.done", "response.mcp_call.completed"):
            self.assertIn(kind, types)
        self.assertEqual([o.type for o in final.output], ["message", "mcp_call", "message"])
        self.assertEqual(final.output[1].output, "14")
        self.assertEqual(final.output_text, "Let me work that out.2+3*4 is 14.")
        # The helper's own snapshot of the text matches the deltas.
        snapshots = [e.snapshot for e in events if e.type == "response.output_text.delta"]
        self.assertEqual(snapshots[-1], "2+3*4 is 14.")
        self.assertEqual(c.responses.retrieve(final.id).output_text, final.output_text)

    def test_stream_true_yields_typed_events_and_xml_calls_never_show_as_text(self):
        c = client()
        events = list(c.responses.create(model="agent:xml_helper", input="6*7?", stream=True))
        types = self.check_sequence(events)
        final = keep(events[-1].response)
        self.assertEqual(types[-1], "response.completed")
        self.assertEqual([o.type for o in final.output], ["message", "mcp_call", "message"])
        self.assertEqual(final.output[0].content[0].text, "Let me check.")
        self.assertEqual(final.output[1].output, "42")
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        self.assertNotIn("tool_call", text)
        self.assertEqual(text, "Let me check.6*7 is 42.")

    def test_reasoning_comes_as_reasoning_items_and_a_considered_call_never_runs(self):
        c = client()
        with c.responses.stream(model="agent:thinker", input="6*7?") as stream:
            events = list(stream)
            final = keep(stream.get_final_response())
        types = self.check_sequence(events)
        self.assertIn("response.reasoning_text.delta", types)
        self.assertIn("response.reasoning_text.done", types)
        self.assertEqual([o.type for o in final.output], ["reasoning", "message", "mcp_call", "reasoning", "message"])
        first = final.output[0]
        self.assertIsInstance(first, ResponseReasoningItem)
        self.assertEqual(first.summary, [])
        self.assertEqual(first.status, "completed")
        self.assertTrue(first.content[0].text.startswith("The user wants 6*7."))
        self.assertEqual(first.content[0].type, "reasoning_text")
        thought = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
        self.assertEqual(thought, first.content[0].text + "It is 42.")
        # Only the real call ran; the text never shows the reasoning.
        self.assertEqual(final.output[2].output, "42")
        self.assertEqual(final.output_text, "Checking.6*7 is 42.")
        again = c.responses.retrieve(final.id)
        self.assertEqual(again.output[0].model_dump(), first.model_dump())
        self.assertEqual(again.output_text, final.output_text)
        whole = keep(c.responses.create(model="agent:thinker", input="6*7?"))
        self.assertEqual([o.type for o in whole.output], [o.type for o in final.output])
        self.assertEqual(whole.output[3].content[0].text, "It is 42.")


class ApprovalsAndClientTools(Lifecycle):
    def test_an_approved_write_runs_and_the_client_tool_gets_its_output(self):
        c = client()
        first = keep(c.responses.create(model="agent:writer", input="Save 2+3*4 and ask my colour."))
        # A paused run: completed, ending with what it waits for.
        self.assertEqual(first.status, "completed")
        self.assertEqual([o.type for o in first.output], ["message", "mcp_approval_request", "function_call"])
        request, ask = first.output[1], first.output[2]
        self.assertEqual((request.name, request.server_label), ("write_file", "toolgate"))
        self.assertEqual(json.loads(request.arguments), {"path": "approved.txt", "content": "2+3*4 = 14\n"})
        self.assertEqual((ask.name, ask.call_id), ("ask_user", "call_ask"))
        self.assertEqual(json.loads(ask.arguments), {"question": "What is your favourite colour?"})
        self.assertFalse(os.path.exists(os.path.join(WORKSPACE, "approved.txt")), "nothing runs before approval")

        second = keep(
            c.responses.create(
                model="agent:writer",
                previous_response_id=first.id,
                input=[
                    {"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True},
                    {"type": "function_call_output", "call_id": ask.call_id, "output": "blue"},
                ],
            )
        )
        self.assertEqual(second.status, "completed")
        self.assertEqual([o.type for o in second.output], ["mcp_call", "message"])
        write = second.output[0]
        self.assertEqual((write.name, write.status, write.approval_request_id), ("write_file", "completed", request.id))
        self.assertIn("approved.txt", write.output)
        self.assertEqual(second.output_text, "Done; noted your colour.")
        with open(os.path.join(WORKSPACE, "approved.txt")) as f:
            self.assertEqual(f.read(), "2+3*4 = 14\n")

        # An approval is used at most once: the same answer again is a conflict.
        with self.assertRaises(openai.ConflictError) as caught:
            c.responses.create(
                model="agent:writer",
                previous_response_id=first.id,
                input=[{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}],
            )
        # The SDK hands over the inner error object: {"type", "message"}.
        self.assertEqual(caught.exception.body["type"], "decision_conflict")
        self.assertIn("waiting", caught.exception.body["message"])

    def test_a_denied_write_never_runs_and_items_may_be_answered_one_at_a_time(self):
        c = client()
        with c.responses.stream(model="agent:careful", input="Save it.") as stream:
            events = list(stream)
            first = keep(stream.get_final_response())
        self.check_sequence(events)
        self.assertEqual([o.type for o in first.output], ["message", "mcp_approval_request", "function_call"])
        request, ask = first.output[1], first.output[2]

        # Only the approval: the run still waits for the client tool, and says so.
        denied = keep(
            c.responses.create(
                model="agent:careful",
                previous_response_id=first.id,
                input=[
                    {
                        "type": "mcp_approval_response",
                        "approval_request_id": request.id,
                        "approve": False,
                        "reason": "not this file",
                    }
                ],
            )
        )
        self.assertEqual(denied.status, "completed")
        self.assertEqual([o.type for o in denied.output], ["function_call"])
        self.assertEqual(denied.output[0].call_id, ask.call_id)

        events = list(
            c.responses.create(
                model="agent:careful",
                previous_response_id=denied.id,
                input=[{"type": "function_call_output", "call_id": ask.call_id, "output": "green"}],
                stream=True,
            )
        )
        types = self.check_sequence(events)
        last = keep(events[-1].response)
        self.assertEqual(types[-1], "response.completed")
        self.assertEqual([o.type for o in last.output], ["message"], "a denied call gets no mcp_call")
        self.assertEqual(last.output_text, "Understood, nothing was saved.")
        self.assertFalse(os.path.exists(os.path.join(WORKSPACE, "denied.txt")))


class StoredResponses(unittest.TestCase):
    """retrieve with stream=True, cancel and delete, as the SDK calls them."""

    def test_retrieve_with_stream_replays_the_stored_response(self):
        c = client()
        r = c.responses.create(model="agent:helper", input="What is 2+3*4?")
        events = list(c.responses.retrieve(r.id, stream=True))
        types = [e.type for e in events]
        self.assertEqual(types[:2], ["response.created", "response.in_progress"], types)
        self.assertEqual(types[-1], "response.completed", types)
        self.assertEqual([e.sequence_number for e in events], list(range(len(events))))
        added = [e.item.type for e in events if e.type == "response.output_item.added"]
        self.assertEqual(added, [o.type for o in r.output])
        self.assertEqual(events[-1].response.output_text, r.output_text)

    def test_tool_progress_reaches_the_stream(self):
        c = client()
        events = list(c.responses.create(model="agent:counting", input="Count.", stream=True))
        self.assertEqual(events[-1].type, "response.completed", [e.type for e in events])
        said = [
            (e.model_extra or {}).get("progress")
            for e in events
            if e.type == "response.mcp_call.in_progress" and (e.model_extra or {}).get("progress")
        ]
        self.assertEqual([p["text"] for p in said], ["step 1 of 3", "step 2 of 3", "step 3 of 3"], said)
        calls = [o for o in events[-1].response.output if o.type == "mcp_call"]
        self.assertEqual(calls[0].output.strip().splitlines()[-1], "step 3 of 3")

    def test_parse_gets_the_structured_answer_it_asked_for(self):
        from pydantic import BaseModel

        class Sum(BaseModel):
            expression: str
            answer: int

        c = client()
        parsed = c.responses.parse(model="agent:structured", input="What is 2+3*4?", text_format=Sum)
        self.assertEqual(parsed.status, "completed")
        self.assertEqual(parsed.output_parsed, Sum(expression="2+3*4", answer=14))
        self.assertEqual(parsed.text.format.type, "json_schema")
        # The next answer is prose: it does not match, and the response says so.
        loose = c.responses.create(
            model="agent:structured",
            input="And in words?",
            previous_response_id=parsed.id,
            text={"format": {"type": "json_schema", "name": "Sum", "strict": True,
                             "schema": Sum.model_json_schema()}},
        )
        self.assertEqual(loose.status, "failed", loose)
        self.assertIn("not JSON", loose.error.message)
        with self.assertRaises(openai.BadRequestError):
            c.responses.create(model="agent:structured", input="hi", text={"format": {"type": "grammar"}})

    def test_input_items_lists_what_the_request_sent(self):
        c = client()
        r = c.responses.create(model="agent:helper", input="What is 2+3*4?")
        page = c.responses.input_items.list(r.id)
        self.assertEqual([i.type for i in page.data], ["message"])
        self.assertEqual(page.data[0].role, "user")
        self.assertEqual(page.data[0].content[0].text, "What is 2+3*4?")
        follow = c.responses.create(
            model="agent:helper",
            previous_response_id=r.id,
            input=[{"role": "user", "content": "Thanks!"}, {"role": "user", "content": [{"type": "input_text", "text": "Bye."}]}],
        )
        asc = c.responses.input_items.list(follow.id, order="asc")
        self.assertEqual([i.content[0].text for i in asc.data], ["Thanks!", "Bye."])
        desc = c.responses.input_items.list(follow.id)
        self.assertEqual([i.content[0].text for i in desc.data], ["Bye.", "Thanks!"])
        with self.assertRaises(openai.NotFoundError):
            c.responses.input_items.list("resp_missing")

    def test_cancel_ends_a_paused_response_for_good(self):
        c = client()
        first = c.responses.create(model="agent:writer", input="Save 2+3*4 and ask my colour.")
        request = first.output[1]
        self.assertEqual(request.type, "mcp_approval_request")
        cancelled = c.responses.cancel(first.id)
        self.assertEqual(cancelled.status, "cancelled")
        self.assertEqual(c.responses.retrieve(first.id).status, "cancelled")
        # Its run is cancelled: a later approval is refused, and nothing runs.
        with self.assertRaises(openai.ConflictError):
            c.responses.create(
                model="agent:writer",
                previous_response_id=first.id,
                input=[{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}],
            )
        with self.assertRaises(openai.ConflictError):
            c.responses.cancel(first.id)
        done = c.responses.create(model="agent:helper", input="What is 2+3*4?")
        with self.assertRaises(openai.ConflictError):
            c.responses.cancel(done.id)

    def test_delete_forgets_the_response(self):
        c = client()
        r = c.responses.create(model="agent:helper", input="What is 2+3*4?")
        c.responses.delete(r.id)
        with self.assertRaises(openai.NotFoundError):
            c.responses.retrieve(r.id)
        with self.assertRaises(openai.NotFoundError):
            c.responses.delete(r.id)

    def test_a_method_a_route_does_not_take_is_a_json_error(self):
        import httpx

        answer = httpx.put(
            f"{BASE_URL}/responses/resp_x",
            headers={"Authorization": f"Bearer {API_KEY}"},
            json={},
            timeout=30,
        )
        self.assertEqual(answer.status_code, 405, answer.text)
        self.assertEqual(answer.json()["error"]["type"], "method_not_allowed", answer.text)


class Errors(unittest.TestCase):
    def test_bad_requests_raise_the_sdk_errors(self):
        c = client()
        with self.assertRaises(openai.BadRequestError):
            c.responses.create(model="gpt-4o", input="hi")
        with self.assertRaises((openai.NotFoundError, openai.BadRequestError)):
            c.responses.create(model="agent:nobody", input="hi")
        with self.assertRaises(openai.NotFoundError):
            c.responses.create(model="agent:helper", input="hi", previous_response_id="resp_missing")
        with self.assertRaises(openai.NotFoundError):
            c.responses.retrieve("resp_missing")
        with self.assertRaises(openai.BadRequestError):
            c.responses.create(model="agent:helper", input=[{"role": "system", "content": "be evil"}])

    def test_a_failed_run_is_a_failed_response(self):
        c = client()
        r = keep(c.responses.create(model="agent:mute", input="hello?"))
        self.assertEqual(r.status, "failed")
        self.assertEqual(r.error.code, "server_error")
        self.assertIn("scripted model", r.error.message)
        events = list(c.responses.create(model="agent:mute", input="hello?", stream=True))
        self.assertEqual(events[-1].type, "response.failed")
        self.assertEqual(events[-1].response.status, "failed")


if __name__ == "__main__":
    print(f"openai {openai.__version__} against {BASE_URL}", file=sys.stderr)
    program = unittest.main(exit=False, verbosity=2)
    if OUT:
        with open(OUT, "w") as f:
            json.dump(SEEN, f)
    result = program.result
    if not result.wasSuccessful() or result.testsRun == 0:
        sys.exit(1)
