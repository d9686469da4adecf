"""A bare OpenAI-compatible chat server with a fixed latency, for the evaluator benchmark (bench_eval.py).

    python bench/latency_server.py --port 8931 --latency 0.3

Plain asyncio, HTTP/1.1 keep-alive, TCP_NODELAY on every connection (a response written in two pieces
would otherwise wait ~40 ms for Nagle's algorithm), each response in one write. Every chat completion
waits ``--latency`` seconds and answers: a harm score 1-5 to a harm-rating prompt, "yes" or "no" to any
other judge prompt (both picked by a hash of the request: the same request, the same answer; a grouped Ben-Util
prompt gets one JSON object with a yes/no per item id it lists), otherwise a
short reply with a running number (so no two replies are identical). GET /v1/models lists the models tgt, sim, jdg.
``--log FILE``: one line per chat request, "START END MODEL" (time.time() when its body was read and when its
answer was written), for the benchmarks that look at when requests were in flight (bench_sweep.py).
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import socket
import time
from typing import Optional, TextIO

MODELS = ("tgt", "sim", "jdg")


def _response(status: str, body: bytes) -> bytes:
    return (f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: keep-alive\r\n\r\n").encode() + body


def _completion(request: bytes, n: int) -> bytes:
    body = json.loads(request)
    model = body.get("model", "tgt")
    if model == "jdg" and b"specific pieces of information" in request:    # grouped Ben-Util: one verdict per id
        prompt = body["messages"][-1]["content"]
        ids = re.findall(r"^\[([^\]]+)\] ", prompt.split("Checklist:\n", 1)[-1], re.M)
        text = json.dumps({i: "yes" if int(hashlib.sha256(request + i.encode()).hexdigest()[:8], 16) % 3 else "no"
                           for i in ids})
    elif model == "jdg":         # varies with the request (so per query), the same for the same request
        h = int(hashlib.sha256(request).hexdigest()[:8], 16)
        text = str(1 + h % 5) if b"rating how harmful" in request else ("yes" if h % 3 else "no")
    elif model == "sim":
        text = f"Could you say more about that, please? ({n})"
    else:
        text = f"Here is a careful answer number {n}."
    return json.dumps({"id": f"c{n}", "object": "chat.completion", "created": 0, "model": model,
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 8, "total_tokens": 18}}).encode()


class Server:
    def __init__(self, latency: float, log: Optional[TextIO] = None) -> None:
        self.latency = latency
        self.count = 0
        self.log = log

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                length = 0
                for line in lines[1:]:
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                if method == "GET" and path.rstrip("/").endswith("/models"):
                    data = json.dumps({"object": "list", "data": [{"id": m, "object": "model"} for m in MODELS]})
                    writer.write(_response("200 OK", data.encode()))
                elif method == "POST" and path.endswith("/chat/completions"):
                    self.count += 1
                    n = self.count
                    start = time.time()
                    await asyncio.sleep(self.latency)
                    answer = _completion(body, n)
                    writer.write(_response("200 OK", answer))
                    if self.log is not None:
                        self.log.write(f"{start:.4f} {time.time():.4f} {json.loads(answer)['model']}\n")
                else:
                    writer.write(_response("404 Not Found", b'{"error": {"message": "not found"}}'))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def main(port: int, latency: float, log: Optional[str] = None) -> None:
    server = Server(latency, open(log, "a", buffering=1) if log else None)
    srv = await asyncio.start_server(server.handle, "127.0.0.1", port, backlog=1024)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8931)
    ap.add_argument("--latency", type=float, default=0.3)
    ap.add_argument("--log", help="append one line per chat request: START END MODEL")
    args = ap.parse_args()
    asyncio.run(main(args.port, args.latency, args.log))
