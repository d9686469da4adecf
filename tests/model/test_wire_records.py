"""A call's generation parameters are a record (GenParams) keyed as the dict they replace, and a response body is
read through small records at the edge: the same keys, bodies and readings as before."""
from carryon_eval.model.endpoint import EndpointConfig, GenParams, cache_key, keyed_request
from carryon_eval.model.refusals import error_fields
from carryon_eval.model.wire import Malformed, parse_completion, request_body

MSGS = [{"role": "user", "content": "Hi"}]


def test_the_params_record_keys_a_call_as_the_dict_it_replaces():
    plain = {"temperature": 0.0, "max_tokens": 1024, "seed": None, "response_format": None, "top_logprobs": None}
    assert cache_key("m", MSGS, GenParams()) == cache_key("m", MSGS, plain)
    config = EndpointConfig("http://x/v1", "m", temperature="default", reasoning_effort="low", system_prompt="Be brief")
    key, sent, params = keyed_request(config, MSGS, GenParams.given({"max_tokens": 8, "other": 1}))
    assert params == GenParams(temperature="default", max_tokens=8, reasoning_effort="low")
    assert key == cache_key("m", sent, {**plain, "max_tokens": 8, "temperature": "default", "reasoning_effort": "low"})
    assert sent[0] == {"role": "system", "content": "Be brief"}
    body = request_body("m", MSGS, GenParams(seed=3, top_logprobs=5, extra_body={"top_p": 1}))
    assert list(body) == ["model", "messages", "max_tokens", "temperature", "seed", "logprobs", "top_logprobs", "top_p"]


def test_a_response_body_is_read_through_its_records():
    got = parse_completion({"choices": [{"message": {"content": "Yes", "reasoning_content": "think"},
                                         "finish_reason": "stop",
                                         "logprobs": {"content": [{"top_logprobs": [{"token": "Yes", "logprob": 0}]}]}}],
                            "usage": {"prompt_tokens": 5, "completion_tokens": 2,
                                      "completion_tokens_details": {"reasoning_tokens": 4},
                                      "prompt_tokens_details": {"cached_tokens": 3}}}, want_logprobs=True)
    assert (got.text, got.finish_reason, got.top_logprobs) == ("<think>think</think>\nYes", "stop", [("Yes", 0.0)])
    assert (got.prompt_tokens, got.completion_tokens, got.reasoning_tokens, got.cached_prompt_tokens) == (5, 6, 4, 3)
    for bad in ({"choices": [{"message": []}]}, {"choices": [{"message": {"content": "x"}, "logprobs": {
            "content": [{"top_logprobs": [{"token": "x"}]}]}}]}):
        try:
            parse_completion(bad, want_logprobs=True)
        except Malformed:
            continue
        raise AssertionError(f"{bad} read as a completion")


def test_an_error_body_names_its_param_code_and_message():
    assert error_fields({"error": {"message": "no", "param": "seed", "code": "bad"}}, "x") == ("seed", "bad", "no")
    assert error_fields({"message": "flat", "param": 3}, "x") == (None, None, "flat")
    assert error_fields({"error": "text"}, "x") == (None, None, "x") and error_fields("body", "x") == (None, None, "x")
