"""The parts of the Responses API a client brings itself, driven by the official,
unmodified `openai` Python package against agents on an OpenAI model (tests/openai_sdk.rs
runs a fake OpenAI server behind `toolgate serve`): function tools declared per request
(the model calls one, the response ends with a `function_call`, the client answers with
`function_call_output`, whole and streamed), custom tools (freeform input under a grammar:
a `custom_tool_call` answered with `custom_tool_call_output`), `input_image` and `input_file` parts, and
`text.format` as OpenAI's `response_format`; and the 400s for what toolgate refuses.

With arguments, one half of a round trip across a restart of the server:
  declare FILE   declares get_weather; the response's id and call id go to FILE
  answer FILE    answers that call (sending no tools) and prints the final text

Environment:
  TOOLGATE_BASE_URL   http://127.0.0.1:PORT/v1
  TOOLGATE_API_KEY    the server's key
  TOOLGATE_WORKSPACE  the server's --workspace, to check the saved attachments
"""

import base64
import json
import os
import sys
import unittest

import openai
import pydantic
from openai import OpenAI

BASE_URL = os.environ["TOOLGATE_BASE_URL"]
API_KEY = os.environ.get("TOOLGATE_API_KEY", "none")
WORKSPACE = os.environ["TOOLGATE_WORKSPACE"]

# A PNG signature and bytes: the fake model never decodes it.
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city, now.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}


def client():
    return OpenAI(base_url=BASE_URL, api_key=API_KEY, max_retries=0, timeout=60)


def file_part(name, data):
    return {"type": "input_file", "filename": name,
            "file_data": "data:text/plain;base64," + base64.b64encode(data).decode()}


class FunctionTools(unittest.TestCase):
    def test_a_declared_tool_is_called_answered_and_used(self):
        c = client()
        first = c.responses.create(model="agent:client_tools", input="What is the weather in Paris?",
                                   tools=[WEATHER])
        self.assertEqual(first.status, "completed")
        self.assertIn("get_weather", [t.name for t in first.tools if t.type == "function"])
        call = first.output[-1]
        self.assertEqual(call.type, "function_call")
        self.assertEqual(call.name, "get_weather")
        self.assertEqual(json.loads(call.arguments), {"city": "Paris"})
        # The answer sends no tools: the run keeps the ones its first request declared.
        second = c.responses.create(
            model="agent:client_tools", previous_response_id=first.id,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21 C"}])
        self.assertEqual(second.status, "completed", second.error)
        self.assertIn("sunny, 21 C", second.output_text)
        self.assertIn("get_weather", [t.name for t in second.tools if t.type == "function"])
        # A new message in the chain, again without tools: the new run inherits them.
        third = c.responses.create(model="agent:client_tools", previous_response_id=second.id,
                                   input="And the weather in Oslo?")
        self.assertEqual((third.output[-1].type, third.output[-1].name), ("function_call", "get_weather"))
        answered = c.responses.create(
            model="agent:client_tools", previous_response_id=third.id,
            input=[{"type": "function_call_output", "call_id": third.output[-1].call_id, "output": "fog"}])
        self.assertIn("fog", answered.output_text)
        # One that declares an empty set takes them away.
        fourth = c.responses.create(model="agent:client_tools", previous_response_id=answered.id,
                                    input="Weather in Oslo, without tools", tools=[])
        self.assertEqual(fourth.status, "completed", fourth.error)
        self.assertEqual(fourth.output_text, "Seen.")
        self.assertNotIn("function", [t.type for t in fourth.tools])

    def test_the_stream_accumulator_takes_the_function_call(self):
        c = client()
        with c.responses.stream(model="agent:client_tools", input="Weather in Oslo, please",
                                tools=[WEATHER]) as stream:
            events = list(stream)
            first = stream.get_final_response()
        types = [e.type for e in events]
        self.assertIn("response.function_call_arguments.done", types)
        added = [e.item for e in events if e.type == "response.output_item.added"]
        self.assertIn("function_call", [i.type for i in added])
        call = first.output[-1]
        self.assertEqual((call.type, call.name), ("function_call", "get_weather"))
        self.assertEqual(json.loads(call.arguments), {"city": "Oslo"})
        with c.responses.stream(model="agent:client_tools", previous_response_id=first.id,
                                input=[{"type": "function_call_output", "call_id": call.call_id,
                                        "output": "snow"}],
                                tools=[WEATHER]) as stream:
            second = stream.get_final_response()
        self.assertEqual(second.status, "completed")
        self.assertIn("snow", second.output_text)

    def test_an_xml_agent_is_told_of_the_declared_tool(self):
        r = client().responses.create(model="agent:client_tools_xml", input="Just say hello (xml)",
                                      tools=[WEATHER])
        self.assertEqual(r.status, "completed")
        self.assertEqual(r.output_text, "Seen.")

    def test_tools_toolgate_cannot_take_are_400s(self):
        c = client()
        cases = [
            ([dict(WEATHER, name="calculator")], "already a tool of agent 'client_tools'"),
            ([dict(WEATHER, parameters={"type": "object", "properties": {"x": {"type": "nope"}}})],
             "not a usable JSON Schema"),
            ([{"type": "web_search"}], "tools of type 'web_search' are not supported"),
            ([WEATHER, WEATHER], "declared twice"),
        ]
        for tools, expected in cases:
            with self.assertRaises(openai.BadRequestError) as caught:
                c.responses.create(model="agent:client_tools", input="hi", tools=tools)
            self.assertEqual(caught.exception.status_code, 400)
            self.assertIn(expected, caught.exception.body["message"])


SQL = {
    "type": "custom",
    "name": "run_sql",
    "description": "Runs one read-only SQL query on the pets database.",
    "format": {"type": "grammar", "syntax": "regex", "definition": "SELECT .+"},
}


class CustomTools(unittest.TestCase):
    def test_a_custom_tool_call_is_handed_over_and_answered(self):
        c = client()
        first = c.responses.create(model="agent:client_tools", input="Count the pets with SQL", tools=[SQL])
        self.assertEqual(first.status, "completed", first.error)
        self.assertIn("run_sql", [t.name for t in first.tools if t.type == "custom"])
        call = first.output[-1]
        self.assertIsInstance(call, openai.types.responses.ResponseCustomToolCall)
        self.assertEqual((call.type, call.name, call.input), ("custom_tool_call", "run_sql", "SELECT count(*) FROM pets"))
        second = c.responses.create(
            model="agent:client_tools", previous_response_id=first.id,
            input=[{"type": "custom_tool_call_output", "call_id": call.call_id, "output": "3"}])
        self.assertEqual(second.status, "completed", second.error)
        self.assertEqual(second.output_text, "The tool said: 3")
        # A function_call_output answers it too; a wrong call id is a 409.
        with self.assertRaises(openai.ConflictError):
            c.responses.create(model="agent:client_tools", previous_response_id=first.id,
                               input=[{"type": "custom_tool_call_output", "call_id": "nope", "output": "3"}])
        # A grammar that does not compile, or an unknown format, is a 400.
        for bad, expected in [
            (dict(SQL, format={"type": "grammar", "syntax": "regex", "definition": "("}), "does not compile"),
            (dict(SQL, format={"type": "grammar", "syntax": "ebnf", "definition": "x"}), "'lark' or 'regex'"),
        ]:
            with self.assertRaises(openai.BadRequestError) as caught:
                c.responses.create(model="agent:client_tools", input="hi", tools=[bad])
            self.assertIn(expected, caught.exception.body["message"])

    def test_a_custom_tool_call_streams_its_input(self):
        c = client()
        with c.responses.stream(model="agent:client_tools", input="Count the pets with SQL, streamed",
                                tools=[SQL]) as stream:
            events = list(stream)
            first = stream.get_final_response()
        deltas = [e.delta for e in events if e.type == "response.custom_tool_call_input.delta"]
        done = [e for e in events if e.type == "response.custom_tool_call_input.done"]
        self.assertEqual("".join(deltas), "SELECT count(*) FROM pets")
        self.assertEqual(done[0].input, "SELECT count(*) FROM pets")
        added = [e.item for e in events if e.type == "response.output_item.added"]
        self.assertIn("custom_tool_call", [i.type for i in added])
        call = first.output[-1]
        self.assertEqual((call.type, call.input), ("custom_tool_call", "SELECT count(*) FROM pets"))
        with c.responses.stream(model="agent:client_tools", previous_response_id=first.id,
                                input=[{"type": "custom_tool_call_output", "call_id": call.call_id,
                                        "output": "4"}]) as stream:
            second = stream.get_final_response()
        self.assertEqual(second.output_text, "The tool said: 4")


class Attachments(unittest.TestCase):
    def test_an_image_goes_to_the_model(self):
        r = client().responses.create(model="agent:client_tools", input=[{"role": "user", "content": [
            {"type": "input_text", "text": "What is in this picture?"},
            {"type": "input_image", "image_url": PNG_URL}]}])
        self.assertEqual(r.status, "completed", r.error)
        self.assertEqual(r.output_text, "Seen.")

    def test_a_text_only_model_is_told_of_the_image_instead(self):
        r = client().responses.create(model="agent:client_tools_text", input=[{"role": "user", "content": [
            {"type": "input_text", "text": "Any picture?"}, {"type": "input_image", "image_url": PNG_URL}]}])
        self.assertEqual(r.status, "completed", r.error)

    def test_a_file_lands_in_the_workspace(self):
        r = client().responses.create(model="agent:client_tools", input=[{"role": "user", "content": [
            {"type": "input_text", "text": "Read my notes."}, file_part("notes.txt", b"first line\n")]}])
        self.assertEqual(r.status, "completed", r.error)
        with open(os.path.join(WORKSPACE, "uploads", "notes.txt"), "rb") as f:
            self.assertEqual(f.read(), b"first line\n")

    def test_bad_attachments_are_400s_and_nothing_is_written(self):
        c = client()
        big = b"x" * (1024 * 1024 + 1)
        cases = [
            ({"type": "input_file", "filename": "a.txt", "file_data": "data:text/plain;base64,@@@"},
             "not valid base64"),
            (file_part("../../x", b"escape"), "not a plain file name"),
            (file_part("big.txt", big), "larger than"),
            ({"type": "input_file", "file_id": "file-abc"}, "'file_id' is not supported"),
            ({"type": "input_image", "file_id": "file-abc"}, "'file_id' is not supported"),
            ({"type": "input_image", "image_url": "http://example.com/a.png"}, "https URL"),
            # Fetched under the HTTP tools' network rule: no loopback.
            ({"type": "input_image", "image_url": "https://127.0.0.1:9/a.png"}, "a loopback address"),
            ({"type": "input_file", "file_url": "https://127.0.0.1:9/notes.txt"}, "a loopback address"),
            ({"type": "input_image", "image_url": "data:image/png;base64," + base64.b64encode(b"text").decode()},
             "not a PNG, JPEG, GIF or WebP"),
        ]
        for part, expected in cases:
            with self.assertRaises(openai.BadRequestError) as caught:
                c.responses.create(model="agent:client_tools", input=[{"role": "user", "content": [
                    {"type": "input_text", "text": "Look"}, part]}])
            self.assertIn(expected, caught.exception.body["message"], part.get("filename"))
        uploads = os.path.join(WORKSPACE, "uploads")
        self.assertNotIn("big.txt", os.listdir(uploads))
        self.assertFalse(os.path.exists(os.path.join(WORKSPACE, "..", "x")))


class Sum(pydantic.BaseModel):
    expression: str
    answer: int


class StructuredOutput(unittest.TestCase):
    def test_parse_asks_an_openai_model_natively(self):
        r = client().responses.parse(model="agent:client_tools", input="Give 2+3*4 as JSON",
                                     text_format=Sum)
        self.assertEqual(r.status, "completed", r.error)
        self.assertEqual(r.output_parsed, Sum(expression="2+3*4", answer=14))


def declare(path):
    r = client().responses.create(model="agent:client_tools", input="What is the weather in Paris?",
                                  tools=[WEATHER])
    call = r.output[-1]
    assert call.type == "function_call", r.output
    with open(path, "w") as f:
        json.dump({"id": r.id, "call_id": call.call_id}, f)


def answer(path):
    with open(path) as f:
        asked = json.load(f)
    r = client().responses.create(
        model="agent:client_tools", previous_response_id=asked["id"],
        input=[{"type": "function_call_output", "call_id": asked["call_id"], "output": "rain after the restart"}])
    assert r.status == "completed", (r.status, r.error)
    print(r.output_text)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] in ("declare", "answer"):
        {"declare": declare, "answer": answer}[sys.argv[1]](sys.argv[2])
    else:
        unittest.main(verbosity=2)
