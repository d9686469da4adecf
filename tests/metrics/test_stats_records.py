"""A rank correlation and a mixed model are records; their JSON is what compare.json has always held."""
from carryon_eval.metrics.stats import MixedModel, RankCorrelation, mixed_model, rank_correlation, spearman


def test_a_rank_correlation_reads_back_as_written_and_says_why_it_is_missing():
    got = rank_correlation([1, 2, 3, 4], [2, 1, 4, 3])
    assert list(got.to_json()) == ["rho", "p", "n", "reason", "note"] and got.n == 4 and got.p is not None
    assert RankCorrelation.from_json(got.to_json()) == got and spearman([1, 2, 3, 4], [2, 1, 4, 3]) == got.to_json()
    assert rank_correlation([1, 1], [1, 2]).reason == "one of the two rankings is constant: rho is undefined"


def test_a_mixed_model_that_cannot_be_fitted_says_why_and_reads_back():
    rows = [{"model": "a", "y": 1.0, "x": 2.0}, {"model": "a", "y": 2.0, "x": 1.0}]
    got = mixed_model(rows, "y", ["x"])
    assert list(got) == ["formula", "groups", "n", "n_groups", "coefficients", "group_var", "converged", "warnings",
                         "reason"]
    assert got["reason"] == "needs at least 2 models (random intercept per model), got 1"
    assert MixedModel.from_json(got).to_json() == got
