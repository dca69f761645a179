"""The Python surface: arguments, tools in the forms people hold them, errors, the
stream's life, the JSON shape, and stubs that name what the module has."""

import ast
import json
import os
import subprocess
from pathlib import Path

import pytest

import toolgate_parse as tp

XML = (
    "Checking.<tool_call><name>lookup</name><params>"
    "<code><![CDATA[42]]></code><n><![CDATA[7]]></n></params></tool_call>"
)
SCHEMA = {"type": "object", "properties": {"code": {"type": "string"}, "n": {"type": "integer"}}}


def test_parse_without_tools_uses_the_heuristic():
    turn = tp.parse(XML)
    assert turn.text == "Checking."
    assert turn.calls[0].name == "lookup"
    assert turn.calls[0].arguments == {"code": 42, "n": 7}
    assert turn.calls[0].id == "call_1"
    assert turn.problems == []


@pytest.mark.parametrize(
    "tools",
    [
        {"lookup": SCHEMA},
        [{"name": "lookup", "parameters": SCHEMA}],
        [{"type": "function", "function": {"name": "lookup", "parameters": SCHEMA}}],
        [{"name": "lookup", "input_schema": SCHEMA}],
        [{"name": "lookup", "inputSchema": SCHEMA}],
    ],
)
def test_tools_in_every_form_type_the_arguments(tools):
    turn = tp.parse(XML, tools=tools)
    # `code` is a string parameter: it stays "42".
    assert turn.calls[0].arguments == {"code": "42", "n": 7}


def test_dialect_by_name_and_strict_mode():
    hermes = '<tool_call>{"name": "echo", "arguments": {"text": "hi"}}</tool_call>'
    assert tp.parse(hermes, "hermes").calls[0].arguments == {"text": "hi"}
    sloppy = "<tool_call><name>a</name><params><x>1</params></tool_call>"
    assert tp.parse(sloppy).problems[0].kind == "unclosed_tag"
    assert tp.parse(sloppy, strict=True).calls == []
    assert "qwen3-coder" in tp.dialects() and "auto" in tp.dialects()


def test_bad_arguments_are_python_errors():
    with pytest.raises(ValueError, match="unknown dialect 'nope'"):
        tp.parse("x", dialect="nope")
    with pytest.raises(ValueError, match=r"tools\[0\]"):
        tp.parse("x", tools=[{"no_name": 1}])
    with pytest.raises(TypeError):
        tp.parse("x", tools=[object()])
    parser = tp.StreamParser()
    with pytest.raises(TypeError):
        parser.feed(3)
    parser.finish()
    with pytest.raises(ValueError, match="after finish"):
        parser.feed("more")
    with pytest.raises(ValueError):
        parser.finish()


def test_stream_hands_out_text_before_the_call_completes():
    parser = tp.StreamParser(tools={"lookup": SCHEMA})
    first = parser.feed("Checking.<tool_c")
    assert first == [tp.TextDelta("Checking.")]
    rest = parser.feed(XML[len("Checking.<tool_c") :])
    assert [type(e) for e in rest] == [tp.ToolCall]
    assert rest[0].arguments == {"code": "42", "n": 7}
    assert parser.finish() == []


def test_truncated_call_is_never_a_call():
    cut = "<tool_call>\n<function=write_file>\n<parameter=content>\nrm -rf /tmp/build"
    turn = tp.parse(cut)
    assert turn.calls == [] and turn.text == cut
    assert (turn.problems[0].kind, turn.problems[0].tool) == ("truncated_call", "write_file")


def test_to_dict_is_the_json_toolgate_parse_prints():
    turn = tp.parse("<think>hm</think>" + XML)
    d = turn.to_dict()
    assert d["calls"][0] == {"id": "call_1", "name": "lookup", "arguments": {"code": 42, "n": 7}}
    assert d["reasoning"] == [{"text": "hm", "start": 7, "end": 9}]
    json.dumps(d)


def test_to_dict_equals_the_cli_output():
    # The Rust suite (tests/python_parse.rs) names the binary it built.
    binary = os.environ.get("TOOLGATE_BIN")
    if not binary:
        pytest.skip("TOOLGATE_BIN is not set: no toolgate binary to compare with")
    text = "<think>hm</think>" + XML
    out = subprocess.run(
        [binary, "parse"], input=text, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == tp.parse(text).to_dict()


def test_stubs_name_what_the_module_has():
    stub = ast.parse((Path(tp.__file__).parent / "__init__.pyi").read_text())
    classes = {n.name: n for n in stub.body if isinstance(n, ast.ClassDef)}
    functions = {n.name for n in stub.body if isinstance(n, ast.FunctionDef)}
    public = {n for n in tp.__all__ if not n.startswith("__")}
    assert public == set(classes) | functions
    for name, node in classes.items():
        stubbed = {m.name for m in node.body if isinstance(m, ast.FunctionDef)}
        stubbed |= {a.target.id for a in node.body if isinstance(a, ast.AnnAssign)}
        runtime = set(dir(getattr(tp, name)))
        assert stubbed <= runtime, f"{name}: stubbed but missing: {stubbed - runtime}"
        missing = {m for m in runtime if not m.startswith("_")} - stubbed
        assert not missing, f"{name}: not in the stubs: {missing}"
