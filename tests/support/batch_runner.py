"""`batch_runner`: what OpenAI's Batch API (or `vllm run-batch`) does with a batch input file, scripted."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from support.rollout_data import evaluator_handler


def batch_runner(requests: Path, results: Path, fail: Callable[[int], bool] = lambda i: False,
                 answer: Callable[[dict], Any] = evaluator_handler) -> int:
    """What OpenAI's Batch API (or `vllm run-batch`) does with an input file: one output line per request,
    in the documented output format (``answer(body)`` its content); `fail(i)` makes line i an error line."""
    lines = []
    for i, line in enumerate(requests.read_text().splitlines()):
        req = json.loads(line)
        assert req["method"] == "POST" and req["url"] == "/v1/chat/completions"
        if fail(i):
            lines.append({"id": f"batch_req_{i}", "custom_id": req["custom_id"], "response": None,
                          "error": {"code": "server_error", "message": "scripted failure"}})
            continue
        body = req["body"]
        completion = {"id": f"chatcmpl-{i}", "object": "chat.completion", "created": 0, "model": body["model"],
                      "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                   "message": {"role": "assistant", "content": answer(body)}}],
                      "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}
        lines.append({"id": f"batch_req_{i}", "custom_id": req["custom_id"],
                      "response": {"status_code": 200, "request_id": f"req-{i}", "body": completion}, "error": None})
    results.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return len(lines)
