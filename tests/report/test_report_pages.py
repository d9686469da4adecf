"""report.html at full scale: a synthetic run folder of 6,150 conversations gives a summary page under
5 MB that links each query's place on at most 20 pages of queries; every page exists, has no script or external
URL, and opens in headless Chromium with its queries' transcripts. A small run keeps one self-contained report.html (tests/report/test_report.py)."""
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
from carryon_eval.report.pages import MAX_PAGES, PAGES_DIR, anchor, page_names

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


def open_all_in_chromium(pages: list[Path], tmp_path: Path, batch: int = 60) -> dict[tuple[str, str], tuple[int, str]]:
    """Load every page in headless Chromium (as iframes of a harness page, `batch` per browser start) and
    return, per page name and query heading's id, how many conversations the query shows (its open <details>
    less its checklist's) and the heading."""
    seen: dict[tuple[str, str], tuple[int, str]] = {}
    for start in range(0, len(pages), batch):
        frames = "".join(f'<iframe src="{p.resolve().as_uri()}"></iframe>' for p in pages[start:start + batch])
        harness = tmp_path / f"harness-{start}.html"
        harness.write_text(
            "<!DOCTYPE html><html><body>" + frames + "<pre id=out></pre><script>window.onload = () => {"
            "const out = [];for (const f of document.querySelectorAll('iframe')) {const d = f.contentDocument;"
            "for (const h of d.querySelectorAll('h2[id]')) {const q = h.nextElementSibling;"
            "out.push([f.src.split('/').pop(), h.id, q.matches('details.query[open]') ?"
            " q.querySelectorAll(':scope > details').length - 1 : -1, h.textContent].join('\\t'));}}"
            "document.getElementById('out').textContent = out.join('\\n');};</script></body></html>")
        proc = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--allow-file-access-from-files", f"--user-data-dir={tmp_path / 'profile'}",
                               "--dump-dom", harness.resolve().as_uri()],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        out = re.search(r"<pre id=\"out\">(.*?)</pre>", proc.stdout, re.S)
        assert out, proc.stdout[-2000:]
        for line in html.unescape(out.group(1)).splitlines():
            name, where, n, heading = line.split("\t")
            seen[(name, where)] = (int(n), heading)
    return seen


@needs_chromium
def test_a_6150_conversation_report_is_a_small_summary_linking_at_most_20_pages_of_queries(tmp_path: Path) -> None:
    run, bench = synthetic_run(tmp_path)
    write_report(RunFolder(run), bench, n_resamples=20)
    report = (run / "report.html").read_text()
    assert len(report.encode()) < 5_000_000
    pages = sorted((run / PAGES_DIR).glob("*.html"))
    assert len(pages) == MAX_PAGES                         # 410 queries: 20 pages of 20 or 21, in order
    names = page_names(list(bench.queries))
    links = [unquote(link) for link in re.findall(r'href="(report_queries/[^"]+)"', report)]
    assert links == [f"{PAGES_DIR}/{names[q]}#{anchor(q)}" for q in bench.queries]   # every query, in order
    assert all((run / link.split("#")[0]).is_file() for link in links)
    for text in [report] + [p.read_text() for p in pages[:3]]:
        assert "<script" not in text.lower()
        assert not re.search(r"""(src|href)\s*=\s*["'](https?:)?//""", text)      # no external URL

    shown = open_all_in_chromium(pages, tmp_path)
    assert sorted(shown) == sorted((names[q], anchor(q)) for q in bench.queries)    # each query where its link goes
    by_place = {(names[q], anchor(q)): q for q in bench.queries}
    for place, (n_conversations, heading) in shown.items():
        assert n_conversations == PER_QUERY and heading == f"Query {by_place[place]}", (place, n_conversations, heading)


def test_a_report_that_fits_again_is_one_file_and_its_pages_go(tmp_path: Path) -> None:
    run, bench = synthetic_run(tmp_path)
    write_report(RunFolder(run), bench, n_resamples=20)
    assert (run / PAGES_DIR).is_dir()
    lines = (run / "transcripts.jsonl").read_text().splitlines()[:PER_QUERY]
    (run / "transcripts.jsonl").write_text("".join(line + "\n" for line in lines))
    write_report(RunFolder(run), bench, n_resamples=20)
    assert not (run / PAGES_DIR).exists()
    assert json.loads(lines[-1])["conversation_id"] in (run / "report.html").read_text()
