"""A dataset row's identifying columns are read into RowKeys; the row itself stays as the dataset has it."""
from carryon_eval.dataset.load import load_benchmark
from carryon_eval.dataset.rows import RowKeys, keys


def test_every_sample_row_reads_its_keys_and_is_kept_as_read():
    bench = load_benchmark(None)
    for conv in bench.conversations:
        k = keys(conv)
        assert (k.conversation_id, k.query_id, k.flow_id) == (conv["conversation_id"], conv["query_id"], conv["flow_id"])
        assert keys(bench.flows[k.flow_id]).n_turns == 2 * (1 + len(keys(bench.flows[k.flow_id]).moves))
    assert all(keys(row).query_id == qid for qid, row in bench.queries.items())
    assert keys({"flow_id": "f", "extra": 1}) == RowKeys(flow_id="f")          # other columns are the row's own
