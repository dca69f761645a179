"""The same corpus cases as the Rust tests: the whole parse meets each case's
expectations, and a stream cut at random places (bytes, even inside a character, and
str) gives exactly the whole parse."""

import random

import pytest

import toolgate_parse as tp
from corpus import cases, options

CASES = cases()
IDS = [f"{c['file']}:{c['name']}" for c in CASES]


def test_corpus_is_the_rust_one():
    # The Rust corpus test asks for at least 80 cases; a path mistake here would find none.
    assert len(CASES) >= 80
    assert len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_whole_parse_meets_expectations(case):
    turn = tp.parse(case["input"], **options(case))
    expect = case["expect"]
    assert turn.text == expect["text"]
    assert [r.text for r in turn.reasoning] == expect.get("reasoning", [])
    calls = expect.get("calls", [])
    assert [c.name for c in turn.calls] == [c["name"] for c in calls]
    for want, have in zip(calls, turn.calls):
        assert have.arguments == want.get("arguments", {})
        if "id" in want:
            assert have.id == want["id"]
    assert [p.kind for p in turn.problems] == expect.get("problems", [])
    ids = [c.id for c in turn.calls]
    assert len(set(ids)) == len(ids) and all(ids)


def collect(events):
    """Folds stream events into what `parse` returns, as the Rust `collect` does:
    text deltas joined, reasoning pieces that follow each other joined into blocks."""
    text, reasoning, calls, problems = [], [], [], []
    for e in events:
        if isinstance(e, tp.TextDelta):
            text.append(e.text)
        elif isinstance(e, tp.Reasoning):
            if reasoning and reasoning[-1][2] == e.start:
                last = reasoning[-1]
                reasoning[-1] = (last[0] + e.text, last[1], e.end)
            else:
                reasoning.append((e.text, e.start, e.end))
        elif isinstance(e, tp.ToolCall):
            calls.append(e)
        elif isinstance(e, tp.Problem):
            problems.append(e)
        else:
            raise AssertionError(f"unexpected event {e!r}")
    return "".join(text), reasoning, calls, problems


def streamed(pieces, case):
    parser = tp.StreamParser(**options(case))
    events = []
    for piece in pieces:
        events.extend(parser.feed(piece))
    events.extend(parser.finish())
    return collect(events)


def cut(seq, rng):
    """`seq` cut at 0 to 8 random places (some pieces empty)."""
    points = sorted(rng.randint(0, len(seq)) for _ in range(rng.randint(0, 8)))
    bounds = [0, *points, len(seq)]
    return [seq[a:b] for a, b in zip(bounds, bounds[1:])]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_streamed_equals_whole_for_random_splits(case):
    whole = tp.parse(case["input"], **options(case))
    want = (
        whole.text,
        [(r.text, r.start, r.end) for r in whole.reasoning],
        whole.calls,
        whole.problems,
    )
    rng = random.Random(case["name"])
    data = case["input"].encode()
    for _ in range(12):
        assert streamed(cut(data, rng), case) == want
        assert streamed(cut(case["input"], rng), case) == want
    # One byte at a time: every character cut.
    assert streamed([data[i : i + 1] for i in range(len(data))], case) == want
