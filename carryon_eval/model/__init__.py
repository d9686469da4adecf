"""The model layer: the one seam to every model (`ChatEndpoint`) and what sits behind it.

endpoint (the protocol, its result, config, usage), client (HTTP: retries, backoff, concurrency), wire (the request
body and the reading of a response, shared with Batch API files), cache (the
response cache), structured (which structured-output form an endpoint takes), ask (the retry-until-usable loop),
pool (endpoint pools), budget (``--max-calls``), local and local_files (the embedded model). Nothing here imports
a layer above it.
"""
