"""Hand-run: CPU per call of the bare openai client on each HTTP transport (what the endpoint client's default
was chosen on). One process per run, against bench/latency_server.py (start it first):

    python bench/latency_server.py --port 8942 --latency 0.05 &
    python bench/bench_transport.py http://127.0.0.1:8942/v1 httpx 3000 64          # the SDK's default
    python bench/bench_transport.py http://127.0.0.1:8942/v1 httpx-limits 3000 64   # httpx, pool = concurrency
    python bench/bench_transport.py http://127.0.0.1:8942/v1 aiohttp 3000 64        # DefaultAioHttpClient

Judge-like calls (max_tokens 8); 50 warm-up calls, then N calls timed (wall, and this process's CPU time).
"""
import asyncio, sys, time
import openai
try:
    import httpx2 as httpx
except ImportError:  # openai before 3
    import httpx
url, transport, n, conc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
async def main():
    limits = httpx.Limits(max_connections=conc, max_keepalive_connections=conc)
    if transport == "aiohttp":
        hc = openai.DefaultAioHttpClient(limits=limits)
    elif transport == "httpx-limits":
        hc = openai.DefaultAsyncHttpxClient(limits=limits)
    else:
        hc = None
    client = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0, http_client=hc)
    gate = asyncio.Semaphore(conc)
    async def one(i):
        async with gate:
            r = await client.chat.completions.create(model="jdg", messages=[{"role": "user", "content": f"judge {i}"}], max_tokens=8, temperature=0)
            return r.choices[0].message.content
    await asyncio.gather(*(one(i) for i in range(50)))
    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(i) for i in range(n)))
    w, c = time.perf_counter() - t0, time.process_time() - c0
    print(f"{transport:14s} n={n} conc={conc} wall {w:.2f}s cpu {c:.2f}s  {1000*c/n:.3f} ms/call  {n/c:.0f} calls/cpu-s")
    await client.close()
asyncio.run(main())
