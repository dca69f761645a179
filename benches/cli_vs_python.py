#!/usr/bin/env python3
"""`toolgate parse --jsonl` whole-process against Python ElementTree + regex parse-only,
on the same generated XML/CDATA corpus, in the same run; and the command's peak memory.

    cargo build --release
    python3 benches/cli_vs_python.py [--mb 64] [--bin target/release/toolgate]

The corpus is one JSON object per line, {"text": OUTPUT}, each output prose with one to
three <tool_call> blocks (CDATA values, some multi-line code). toolgate is timed as a
whole process (start, read, parse, write JSON to /dev/null); Python only for its parse
loop over texts already in memory (regex to find the blocks, ElementTree for each).
MB/s is the corpus file size over the time, for both. Best of three runs each.
Peak memory is /usr/bin/time -v's maximum resident set size, for the corpus and for a
corpus four times larger with the same longest line: it should not grow.
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=64)
    ap.add_argument("--bin", default="target/release/toolgate")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.jsonl")
        size = write_corpus(corpus, a.mb)
        texts = [json.loads(l)["text"] for l in open(corpus, encoding="utf-8")]
        cmd = [a.bin, "parse", "--jsonl", corpus]
        with open(os.devnull, "wb") as null:
            subprocess.run(cmd, stdout=null, check=True)  # warm the page cache
            t_tg = best_of(3, lambda: subprocess.run(cmd, stdout=null, check=True))
        t_py = best_of(3, lambda: [python_parse(t) for t in texts])
        # Same answers: call counts agree.
        out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True).stdout.decode().splitlines()
        tg_calls = sum(len(json.loads(l)["calls"]) for l in out)
        py_calls = sum(len(python_parse(t)[1]) for t in texts)
        assert tg_calls == py_calls, (tg_calls, py_calls)
        mb = size / 1e6
        print(f"corpus: {mb:.1f} MB, {len(texts)} outputs, {tg_calls} calls")
        print(f"toolgate parse --jsonl (whole process): {t_tg:.3f} s, {mb / t_tg:.0f} MB/s")
        print(f"python ElementTree+regex (parse only):  {t_py:.3f} s, {mb / t_py:.0f} MB/s")
        print(f"ratio: {t_py / t_tg:.2f}x")
        big = os.path.join(tmp, "big.jsonl")
        with open(big, "w", encoding="utf-8") as f:
            for _ in range(4):
                f.write(open(corpus, encoding="utf-8").read())
        rss1 = peak_rss_kb(cmd)
        rss4 = peak_rss_kb([a.bin, "parse", "--jsonl", big])
        longest = max(len(l) for l in open(corpus, "rb"))
        print(f"peak RSS: {rss1 / 1024:.1f} MiB for {mb:.0f} MB, {rss4 / 1024:.1f} MiB for {4 * mb:.0f} MB (longest line {longest / 1024:.0f} KiB)")


if __name__ == "__main__":
    sys.exit(main())
