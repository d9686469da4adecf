"""Every default that more than one module needs, in one place (both CLIs, the client, the phases).

Change a default here and every command, record and help text follows.
"""
from __future__ import annotations

#: Environment variable that holds an endpoint's API key (its NAME is recorded, never its value).
API_KEY_ENV = "OPENAI_API_KEY"

# ---------------------------------------------------------------- the endpoint client
CONCURRENCY = 8            # requests in flight per endpoint (the AIMD ceiling); conversations in flight
JUDGE_CONCURRENCY = 16     # judge calls in flight
TIMEOUT = 120.0            # seconds per request (the whole request)
MAX_RETRIES = 6            # retries after the first attempt (transport failures, 429, 5xx)
BACKOFF_BASE = 1.0         # first backoff in seconds; doubles per retry, with jitter
BACKOFF_MAX = 60.0         # cap of one backoff sleep
#: The openai client's HTTP transport: "aiohttp" (openai[aiohttp], about half the CPU per call of httpx at the
#: concurrencies the evaluator runs, bench/README.md) or "httpx" (the SDK's own default).
HTTP_CLIENT = "aiohttp"
HTTP_CLIENTS = ("aiohttp", "httpx")
GIVE_UP_AFTER = 180.0      # seconds without any answer from a role (every endpoint of it failing) that end a phase

# ---------------------------------------------------------------- generation, per role
TARGET_MAX_TOKENS = 1024
TARGET_TEMPERATURE = 0.0
USER_TEMPERATURE = 0.7
USER_MAX_TOKENS = 256
JUDGE_MAX_TOKENS = 1024    # text mode; generous so that reasoning judges can finish
SEED = 0
BOOTSTRAP_RESAMPLES = 1000       # the query-cluster bootstrap behind every 95% CI (--bootstrap-resamples)
BOOTSTRAP_SEED = 0               # its seed (--bootstrap-seed)

# ---------------------------------------------------------------- retry-until-usable budgets (carryon_eval.model.ask)
EMPTY_REPLY_RETRIES = 2    # an empty reply is asked again this many times (empty replies are never cached)
CALIBRATION_SEED = 0       # --calibrate N: which replies are also judged per item
JUDGE_RETRIES = 2          # extra judge attempts after an unparseable answer
REPAIRS = 2                # builder: repair prompts after a malformed reply

# ---------------------------------------------------------------- the embedded model (llama.cpp + Gemma 3 270M)
#: A 270M base model rarely stops by itself, so roles on it get token caps; an explicit option wins.
#: The judge's 16: llama.cpp's JSON grammar lets the model indent (`{\n  "answer": "yes"\n}` is 11 tokens), and the
#: grammar ends the reply when the object closes, so the cap costs nothing beyond the verdict.
LOCAL_MAX_TOKENS = {"target": 200, "user": 128, "judge": 16}
LOCAL_BUILD_MAX_TOKENS = 512   # a builder stage's cap on the embedded model (its grammar keeps replies short)
LOCAL_CONCURRENCY = 1      # llama.cpp's server answers one request at a time: queue here, not in HTTP
LOCAL_TIMEOUT = 600.0
