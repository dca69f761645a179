"""The Rust parser's case corpus (crates/toolgate-parse/tests/corpus/*.json), read as the
Rust tests read it: variables expanded, the corpus tools' schemas, each case's options."""

import json
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "toolgate-parse" / "tests" / "corpus"


def schemas():
    return json.loads((CORPUS / "schemas.json").read_text())


def cases():
    """Every case of every corpus file (not the subfolders), in file order."""
    out = []
    for path in sorted(CORPUS.glob("*.json")):
        if path.name == "schemas.json":
            continue
        for case in json.loads(path.read_text())["cases"]:
            case["file"] = path.name
            out.append(expand(case))
    return out


def expand(case):
    for name, rep in case.get("vars", {}).items():
        token, big = "${" + name + "}", rep["text"] * rep["times"]
        case["input"] = case["input"].replace(token, big)
        expect = case["expect"]
        expect["text"] = expect["text"].replace(token, big)
        expect["reasoning"] = [r.replace(token, big) for r in expect.get("reasoning", [])]
        for call in expect.get("calls", []):
            call["arguments"] = replace(call.get("arguments", {}), token, big)
    return case


def replace(value, token, big):
    if isinstance(value, str):
        return value.replace(token, big)
    if isinstance(value, list):
        return [replace(v, token, big) for v in value]
    if isinstance(value, dict):
        return {k: replace(v, token, big) for k, v in value.items()}
    return value


def options(case):
    """The keyword arguments `parse` and `StreamParser` take for this case."""
    return {
        "dialect": case.get("dialect") or "auto",
        "tools": schemas(),
        "strict": case.get("strict", False),
        "reasoning_opened": case.get("reasoning_opened", False),
    }
