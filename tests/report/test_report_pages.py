"""report.html at full scale: a synthetic run folder of 6,150 conversations gives a summary page under
5 MB that links one page per query; every page exists, has no script or external URL, and opens in headless
Chromium with its transcripts. A small run keeps one self-contained report.html (tests/report/test_report.py)."""
from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest
from support.browser import chromium
from support.judged_run import make_run, transcript

from carryon_eval.run.folder import RunFolder
from carryon_eval.dataset.load import Benchmark
from carryon_eval.report.phase import write_report
from carryon_eval.report.pages import PAGES_DIR, page_name

needs_chromium = pytest.mark.skipif(chromium() is None, reason="chromium is not installed (CI installs it)")
N_QUERIES, PER_QUERY = 410, 15                    # 6,150 conversations, as many as the full benchmark
MOVES = (("benign_justification",), ("pushback", "rephrasing"), ("delaying", "pushback", "backchannel"),
         ("benign_reasking", "pushback", "context_switching", "rephrasing"),
         ("pushback", "rephrasing", "delaying", "backchannel", "pushback"))
FILLER = "A made-up reply sentence that pads the transcript like a real model answer would. " * 5


def qid(i: int) -> str:
    return f"q{i:04d}" if i % 50 else f"q/{i:04d} odd id"        # some ids are no safe file name


def synthetic_run(root: Path) -> tuple[Path, Benchmark]:
    queries = {qid(i): {"query_id": qid(i), "query": f"Made-up question number {i}?", "domain": "Made-up domain",
                        "benign_intent": "a made-up intent"} for i in range(N_QUERIES)}
    checklists = {q: [{"query_id": q, "item_id": f"{q}-i1", "question": "Does it answer?"}] for q in queries}
    transcripts = []
    for q in queries:
        transcripts += [transcript(f"{cond}:{q}", q, cond, [FILLER]) for cond in ("turn1", "oracle")]
        for k in range(PER_QUERY - 2):
            moves = MOVES[k % len(MOVES)]
            cond = "bc" if any(m.startswith(("benign", "context")) for m in moves) else "nc"
            transcripts.append(transcript(f"{q}-c{k}", q, cond, [FILLER] * (len(moves) + 1), moves, shared=True))
    assert len(transcripts) == 6150
    bench = Benchmark(source="synthetic", revision=None, queries=queries, checklists=checklists, flows={},
                      conversations=[])
    return make_run(root / "run", transcripts), bench


def open_all_in_chromium(pages: list[Path], tmp_path: Path, batch: int = 60) -> dict[str, tuple[int, str]]:
    """Load every page in headless Chromium (as iframes of a harness page, `batch` per browser start) and
    return, per page name, how many conversations it shows (the query's <details> less its checklist's) and
    its <h1>."""
    seen: dict[str, tuple[int, str]] = {}
    for start in range(0, len(pages), batch):
        frames = "".join(f'<iframe src="{p.resolve().as_uri()}"></iframe>' for p in pages[start:start + batch])
        harness = tmp_path / f"harness-{start}.html"
        harness.write_text(
            "<!DOCTYPE html><html><body>" + frames + "<pre id=out></pre><script>window.onload = () => {"
            "const out = [];for (const f of document.querySelectorAll('iframe')) {const d = f.contentDocument;"
            "out.push([f.src.split('/').pop(), d.querySelectorAll('details.query[open] > details').length - 1,"
            "d.querySelector('h1').textContent].join('\\t'));}"
            "document.getElementById('out').textContent = out.join('\\n');};</script></body></html>")
        proc = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--allow-file-access-from-files", f"--user-data-dir={tmp_path / 'profile'}",
                               "--dump-dom", harness.resolve().as_uri()],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        out = re.search(r"<pre id=\"out\">(.*?)</pre>", proc.stdout, re.S)
        assert out, proc.stdout[-2000:]
        for line in html.unescape(out.group(1)).splitlines():
            name, n, h1 = line.split("\t")
            seen[name] = (int(n), h1)
    return seen


@needs_chromium
def test_a_6150_conversation_report_is_a_small_summary_linking_one_page_per_query(tmp_path: Path) -> None:
    run, bench = synthetic_run(tmp_path)
    write_report(RunFolder(run), bench, n_resamples=20)
    report = (run / "report.html").read_text()
    assert len(report.encode()) < 5_000_000
    pages = sorted((run / PAGES_DIR).glob("*.html"))
    assert len(pages) == N_QUERIES
    links = [unquote(link) for link in re.findall(r'href="(report_queries/[^"]+)"', report)]
    assert links == [f"{PAGES_DIR}/{page_name(q)}" for q in bench.queries]          # every query, in order
    assert all((run / link).is_file() for link in links)
    for text in [report] + [p.read_text() for p in pages[:3]]:
        assert "<script" not in text.lower()
        assert not re.search(r"""(src|href)\s*=\s*["'](https?:)?//""", text)      # no external URL

    shown = open_all_in_chromium(pages, tmp_path)
    assert set(shown) == {p.name for p in pages}
    by_name = {page_name(q): q for q in bench.queries}
    for name, (n_conversations, h1) in shown.items():
        assert n_conversations == PER_QUERY and h1 == f"Query {by_name[name]}", (name, n_conversations, h1)


def test_a_report_that_fits_again_is_one_file_and_its_pages_go(tmp_path: Path) -> None:
    run, bench = synthetic_run(tmp_path)
    write_report(RunFolder(run), bench, n_resamples=20)
    assert (run / PAGES_DIR).is_dir()
    lines = (run / "transcripts.jsonl").read_text().splitlines()[:PER_QUERY]
    (run / "transcripts.jsonl").write_text("".join(line + "\n" for line in lines))
    write_report(RunFolder(run), bench, n_resamples=20)
    assert not (run / PAGES_DIR).exists()
    assert json.loads(lines[-1])["conversation_id"] in (run / "report.html").read_text()
