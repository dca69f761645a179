#!/usr/bin/env python3
"""`toolgate parse --jsonl` whole-process against Python ElementTree + regex parse-only
and against the in-process parser (the floor: `parse_input` over the same texts already
in memory, one thread), on the same generated XML/CDATA corpus, in the same run; and the
command's peak memory on the corpus and on a large input.

    cargo build --release --bin toolgate --example parse_file
    python3 benches/cli_vs_python.py [--mb 64] [--big-mb 512] [--bin target/release/toolgate]

The corpus is one JSON object per line, {"text": OUTPUT}, each output prose with one to
three <tool_call> blocks (CDATA values, some multi-line code). toolgate is timed as a
whole process (start, read, parse, write JSON to /dev/null); Python only for its parse
loop over texts already in memory (regex to find the blocks, ElementTree for each).
The in-process floor is `examples/parse_file` (release) over the texts joined by 0x1E,
timed inside the process. Every MB/s is the JSONL corpus size over the time, so the
ratios compare the same work. Best of three runs each. The CLI and the floor both run
with no tool schemas (`--tools` an empty folder, `ParseOptions::default()`).
Peak memory is /usr/bin/time -v's maximum resident set size, for the corpus and for the
corpus repeated up to --big-mb (same longest line): it should not grow.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

PROSE = [
    "Let me look that up for you.",
    "I'll check the file first, then run the tests.",
    "Here is what I found: the function returns early when x < 10.",
    "Searching the web for recent results about Rust async runtimes.",
    "The build failed; reading the log to see why.",
]
CODE = "fn main() {\n    let v: Vec<u8> = vec![1, 2, 3];\n    if v.len() < 10 { println!(\"{}\", v[0]); }\n}\n"


def output(rng: random.Random) -> str:
    parts = [rng.choice(PROSE), "\n"]
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.5:
            parts.append(
                "<tool_call><name>web_search</name><params>"
                f"<query><![CDATA[{rng.choice(PROSE)}]]></query>"
                f"<max_results><![CDATA[{rng.randint(1, 50)}]]></max_results>"
                "</params></tool_call>\n"
            )
        else:
            body = CODE * rng.randint(1, 20)
            parts.append(
                "<tool_call><name>write_file</name><params>"
                f"<path><![CDATA[src/f{rng.randint(1, 999)}.rs]]></path>"
                f"<content><![CDATA[{body}]]></content>"
                "</params></tool_call>\n"
            )
        parts.append(rng.choice(PROSE))
    return "".join(parts)


def write_corpus(path: str, megabytes: float, seed: int = 7) -> int:
    rng = random.Random(seed)
    target = int(megabytes * 1024 * 1024)
    size = 0
    with open(path, "w", encoding="utf-8") as f:
        while size < target:
            line = json.dumps({"text": output(rng)}) + "\n"
            f.write(line)
            size += len(line.encode())
    return size


BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def python_parse(text: str):
    calls, prose, last = [], [], 0
    for m in BLOCK.finditer(text):
        prose.append(text[last : m.start()])
        last = m.end()
        root = ET.fromstring(m.group(0))
        params = root.find("params")
        args = {} if params is None else {c.tag: c.text or "" for c in params}
        calls.append({"name": (root.findtext("name") or "").strip(), "arguments": args})
    prose.append(text[last:])
    return "".join(prose), calls


def best_of(n, fn):
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def peak_rss_kb(cmd) -> int:
    with open(os.devnull, "wb") as null:
        r = subprocess.run(["/usr/bin/time", "-v", *cmd], stdout=null, stderr=subprocess.PIPE, check=True)
    for line in r.stderr.decode().splitlines():
        if "Maximum resident set size" in line:
            return int(line.split(":")[1])
    raise RuntimeError("no RSS in /usr/bin/time -v output")


def in_process_seconds(example: str, texts, tmp: str) -> float:
    """Best of three: parse_input over every text, timed by the example itself."""
    joined = os.path.join(tmp, "texts.1e")
    with open(joined, "w", encoding="utf-8") as f:
        f.write("\x1e".join(texts))
    best = float("inf")
    try:
        for _ in range(3):
            best = min(best, one_in_process_run(example, joined))
    finally:
        os.remove(joined)
    return best


def one_in_process_run(example: str, joined: str) -> float:
    out = subprocess.run([example, joined, "1"], stdout=subprocess.PIPE, check=True).stdout.decode()
    m = re.search(r" in ([0-9.]+) s:", out)
    if m is None:
        raise RuntimeError(f"unexpected parse_file output: {out!r}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=64)
    ap.add_argument("--big-mb", type=float, default=0, help="size of the large input for peak RSS [4x --mb]")
    ap.add_argument("--bin", default="target/release/toolgate")
    ap.add_argument("--example", default=None, help="parse_file example [next to --bin: examples/parse_file]")
    a = ap.parse_args()
    example = a.example or os.path.join(os.path.dirname(a.bin), "examples", "parse_file")
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.jsonl")
        size = write_corpus(corpus, a.mb)
        texts = [json.loads(l)["text"] for l in open(corpus, encoding="utf-8")]
        no_tools = os.path.join(tmp, "no-tools")
        os.mkdir(no_tools)
        cmd = [a.bin, "parse", "--tools", no_tools, "--jsonl", corpus]
        with open(os.devnull, "wb") as null:
            subprocess.run(cmd, stdout=null, check=True)  # warm the page cache
            t_tg = best_of(3, lambda: subprocess.run(cmd, stdout=null, check=True))
        t_py = best_of(3, lambda: [python_parse(t) for t in texts])
        t_in = in_process_seconds(example, texts, tmp) if os.path.exists(example) else None
        # Same answers: call counts agree.
        out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True).stdout.decode().splitlines()
        tg_calls = sum(len(json.loads(l)["calls"]) for l in out)
        py_calls = sum(len(python_parse(t)[1]) for t in texts)
        assert tg_calls == py_calls, (tg_calls, py_calls)
        mb = size / 1e6
        print(f"corpus: {mb:.1f} MB, {len(texts)} outputs, {tg_calls} calls")
        print(f"toolgate parse --jsonl (whole process): {t_tg:.3f} s, {mb / t_tg:.0f} MB/s")
        print(f"python ElementTree+regex (parse only):  {t_py:.3f} s, {mb / t_py:.0f} MB/s")
        if t_in is not None:
            print(f"in-process parse_input (one thread):    {t_in:.3f} s, {mb / t_in:.0f} MB/s")
        print(f"ratio to python: {t_py / t_tg:.2f}x")
        if t_in is not None:
            print(f"ratio to the in-process parser: {t_in / t_tg:.2f}x")
        big = os.path.join(tmp, "big.jsonl")
        whole = open(corpus, "rb").read()
        big_size = 0
        with open(big, "wb") as f:
            while big_size < (a.big_mb or 4 * a.mb) * 1024 * 1024:
                f.write(whole)
                big_size += len(whole)
        rss1 = peak_rss_kb(cmd)
        rss_big = peak_rss_kb([a.bin, "parse", "--tools", no_tools, "--jsonl", big])
        longest = max(len(l) for l in open(corpus, "rb"))
        print(
            f"peak RSS: {rss1 / 1024:.1f} MiB for {mb:.0f} MB, {rss_big / 1024:.1f} MiB for "
            f"{big_size / 1e6:.0f} MB (longest line {longest / 1024:.0f} KiB)"
        )


if __name__ == "__main__":
    sys.exit(main())
