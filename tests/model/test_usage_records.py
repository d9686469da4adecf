"""The disk cache's reply and the usage ledger's rows are records: read back and written again, byte for byte."""
import json

from carryon_eval.app.cost import Price, RoleUsage, usage_by_role
from carryon_eval.model.endpoint import CachedReply, ChatResult, Tokens, UsageLedger


def test_a_cached_reply_of_every_shape_is_written_back_as_read():
    plain = {"text": "Yes", "finish_reason": "stop", "prompt_tokens": 12, "completion_tokens": 1, "top_logprobs": None}
    full = {**plain, "top_logprobs": [["Yes", -0.01], ["No", -4.6]], "structured": "json_schema",
            "cached_prompt_tokens": 8, "reasoning_tokens": 30}
    for payload in (plain, full):
        assert json.dumps(ChatResult.from_payload(payload).to_payload()) == json.dumps(payload)
        assert json.dumps(CachedReply.from_json(payload).to_json()) == json.dumps(payload)
    assert ChatResult.from_payload({"text": ""}) is None and ChatResult.from_payload({"finish_reason": "stop"}) is None


def test_the_ledger_rows_are_tokens_and_sum_per_role_with_their_price():
    ledger = UsageLedger()
    reply = ChatResult("ok", "stop", 100, 10, cached=False, cached_prompt_tokens=40)
    ledger.add("target", "m", reply)
    ledger.add("judge:utility", "j", reply)
    ledger.add("judge:utility", "j", ChatResult("ok", "stop", 100, 10, cached=True))
    assert ledger.rows()["judge:utility/j"] == Tokens(calls=2, cache_hits=1, prompt_tokens=100, completion_tokens=10,
                                                      cached_prompt_tokens=40)
    assert ledger.total_tokens() == 220
    roles = usage_by_role(ledger.snapshot(), {"judge": Price(1.0, 2.0, 0.5)})
    judge = roles["judge"].to_json()
    assert list(judge) == ["calls", "cache_hits", "prompt_tokens", "cached_prompt_tokens", "completion_tokens",
                           "reasoning_tokens", "usd", "price_per_1m"]
    assert judge["usd"] == round((60 * 1.0 + 40 * 0.5 + 10 * 2.0) / 1e6, 6)
    assert RoleUsage.from_json(judge).to_json() == judge and "usd" not in roles["target"].to_json()
    assert RoleUsage.from_json({"price_per_1m": {"input": 1, "output": 2, "cached": None}}).price_per_1m == Price(1.0, 2.0)
