"""Escapes a sandboxed program may try, one per row of tests/sandbox.rs. Each returns
{"escaped": bool, "detail": str}: escaped is true only when the attempt fully worked.
Run as a command tool ({"request": "<JSON>"} on stdin, the answer on stdout), or
imported by escape_server.py (an MCP server). Standard library only."""

import json
import os
import signal
import socket
import struct
import sys
import time


def result(escaped, detail):
    return {"escaped": bool(escaped), "detail": str(detail)[:300]}


def read(path, expect):
    """Reads a file; escaped when it holds what the test put there."""
    with open(path, "rb") as f:
        data = f.read(4096)
    return result(expect.encode() in data, f"read {len(data)} bytes")


def works(workspace_file, **_):
    """Not an escape: what every tool must still do (read and write its workspace)."""
    with open(workspace_file) as f:
        text = f.read()
    with open("written-by-tool.txt", "w") as f:
        f.write("ok")
    return result(text.startswith("hello"), "read and wrote the workspace")


def read_file(path, expect, **_):
    return read(path, expect)


def write_outside(path, **_):
    with open(path, "w") as f:
        f.write("escaped")
    return result(os.path.exists(path), f"wrote {path}")


def connect(port, **_):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        greeting = s.recv(16)
    return result(greeting.startswith(b"hello"), f"got {greeting!r}")


def resolve_and_connect(dns_port, port, name="escape.test", **_):
    """Asks a resolver (the test's, on UDP) for NAME, then connects to the address."""
    query = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        query += bytes([len(label)]) + label.encode()
    query += b"\x00" + struct.pack(">HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.settimeout(5)
        u.sendto(query, ("127.0.0.1", dns_port))
        answer, _ = u.recvfrom(512)
    address = socket.inet_ntoa(answer[-4:])
    with socket.create_connection((address, port), timeout=5) as s:
        greeting = s.recv(16)
    return result(greeting.startswith(b"hello"), f"{name} is {address}, got {greeting!r}")


def fork_bomb(count, **_):
    """A bounded bomb: COUNT processes at once (a real one would take the host down
    where it succeeds)."""
    children = []
    error = None
    try:
        for _ in range(count):
            pid = os.fork()
            if pid == 0:
                # Let go of the caller's pipes, then wait to be killed.
                for fd in range(0, 1024):
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                time.sleep(60)
                os._exit(0)
            children.append(pid)
    except OSError as e:
        error = e
    for pid in children:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return result(len(children) == count, f"{len(children)} of {count} started; {error}")


def allocate(gib, **_):
    try:
        block = bytearray(gib << 30)
    except MemoryError as e:
        return result(False, f"MemoryError {e}")
    return result(len(block) == gib << 30, f"allocated {gib} GiB")


def busy(seconds, **_):
    """Burns SECONDS of CPU; a CPU limit kills the process before it answers."""
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass
    return result(True, f"burned {seconds} s of CPU")


def secrets_in_reach(markers, **_):
    """Looks for the server's TOOLGATE_* values and another tool's credential in this
    program's environment and in its parent's (/proc/PPID/environ)."""
    seen = []
    env = "\n".join(f"{k}={v}" for k, v in os.environ.items())
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as f:
            env += "\n" + f.read().replace(b"\0", b"\n").decode(errors="replace")
    except OSError as e:
        seen.append(f"parent environ: {e}")
    found = [m for m in markers if m in env]
    return result(len(found) == len(markers), f"found {len(found)} of {len(markers)}; {seen}")


def signal_server(pid, **_):
    os.kill(pid, 0)
    return result(True, f"signal 0 reached pid {pid}")


ROWS = {
    "works": works,
    "read_file": read_file,
    "write_outside": write_outside,
    "connect": connect,
    "resolve_and_connect": resolve_and_connect,
    "fork_bomb": fork_bomb,
    "allocate": allocate,
    "busy": busy,
    "secrets_in_reach": secrets_in_reach,
    "signal_server": signal_server,
}


def attempt(request):
    row = request.pop("row")
    try:
        return ROWS[row](**request)
    except Exception as e:  # a refusal is the expected outcome of most rows
        return result(False, f"{type(e).__name__}: {e}")


if __name__ == "__main__":
    print(json.dumps(attempt(json.loads(json.load(sys.stdin)["request"]))))
