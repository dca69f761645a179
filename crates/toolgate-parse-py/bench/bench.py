"""Times toolgate_parse against the Python tool-call parsers people use, on Hermes-style
outputs (``<tool_call>{json}</tool_call>``, the format every parser here reads):
agent-tool-parser (PyPI; its Rust engine when ACCELERATED), and vLLM's
Hermes2ProToolParser when vLLM imports. Every parser must find the same calls (names
and arguments) on every case before it is timed; a disagreement fails the bench.

Prints one line per case and parser (microseconds per message, median of repeats) and
the ratio of each parser's time to toolgate_parse's. Run it with bench/run.sh.
"""

import json
import statistics
import sys
import time

import toolgate_parse


def cases():
    """(name, text, expected calls) for outputs of growing size."""
    def call(i):
        args = {"city": f"City {i}", "days": i % 7, "units": "metric", "tags": ["a", "b", str(i)]}
        return {"name": f"tool_{i % 5}", "arguments": args}

    out = []
    for n, prose in [(1, 0), (1, 1), (4, 4), (16, 16)]:
        calls = [call(i) for i in range(n)]
        text = "Some thinking aloud about what to do next. " * prose
        text += "".join(f"<tool_call>\n{json.dumps(c)}\n</tool_call>\n" for c in calls)
        out.append((f"{n} call(s), {len(text)} bytes", text, calls))
    prose = "A plain answer with no calls in it, only prose. " * 64
    out.append((f"no calls, {len(prose)} bytes", prose, []))
    return out


def toolgate(text):
    turn = toolgate_parse.parse(text, dialect="hermes")
    return [{"name": c.name, "arguments": c.arguments} for c in turn.calls]


def toolgate_streamed(text):
    p = toolgate_parse.StreamParser(dialect="hermes")
    for i in range(0, len(text), 16):
        p.feed(text[i : i + 16])
    p.finish()
    return None  # timed only; whole equals streamed is the pytest suite's job


def parsers():
    found = [("toolgate_parse", toolgate), ("toolgate_parse streamed/16B", toolgate_streamed)]
    try:
        import agent_tool_parser

        def atp(text):
            return [{"name": c.name, "arguments": c.args} for c in agent_tool_parser.try_parse_tool_calls(text) or []]

        engine = "rust engine" if agent_tool_parser.ACCELERATED else "python engine"
        found.append((f"agent-tool-parser ({engine})", atp))
    except ImportError as e:
        print(f"agent-tool-parser: not installed ({e})", file=sys.stderr)
    try:
        found.append(("vLLM Hermes2ProToolParser", vllm_hermes()))
    except Exception as e:  # vLLM imports torch and more; say why it is absent
        print(f"vLLM: not benched: {type(e).__name__}: {e}", file=sys.stderr)
    return found


def vllm_hermes():
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.tool_parsers.hermes_tool_parser import Hermes2ProToolParser

    class Tokenizer:
        """The vocabulary lookups the parser makes at construction (no model is loaded)."""

        def get_vocab(self):
            return {"<tool_call>": 1, "</tool_call>": 2}

    parser = Hermes2ProToolParser(Tokenizer())
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}])

    def run(text):
        info = parser.extract_tool_calls(text, request)
        return [
            {"name": c.function.name, "arguments": json.loads(c.function.arguments)}
            for c in info.tool_calls
        ]

    return run


def timed(fn, text, budget=0.2):
    """Median microseconds per call over repeats of about `budget` seconds."""
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn(text)
        took = time.perf_counter() - start
        if took > budget / 5:
            break
        n *= 2
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn(text)
        samples.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(samples)


def main():
    found = parsers()
    for name, text, expected in cases():
        print(f"\n{name}")
        base = None
        for pname, fn in found:
            got = fn(text)
            if got is not None and got != expected:
                sys.exit(f"{pname} disagrees on '{name}':\n  got {got}\n  want {expected}")
            us = timed(fn, text)
            base = base or us
            print(f"  {pname:36} {us:10.2f} us   x{us / base:6.2f}")


if __name__ == "__main__":
    main()
