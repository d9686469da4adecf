"""A key goes only to the endpoint it was given for: servers that log the Authorization header of every request
(tests/support/scripted_server.py, ``log_authorization``) show which key reached which server. A sweep whose
simulator and judge sit on other endpoints with no key of their own is refused before any request; with their own
keys, each server sees only its own; a single run and `judge RUNDIR` refuse a judge elsewhere with a borrowed key."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.eval_cli import invoke, one_error_line
from support.rollout_data import unique_replies

KEYS = {"KEY_A": "sk-target-a-0123456789", "KEY_B": "sk-target-b-0123456789", "KEY_U": "sk-simulator-0123456789",
        "KEY_J": "sk-judge-0123456789"}


def played(body: dict) -> Any:
    """Targets t-a and t-b answer as the scripted target."""
    return unique_replies({**body, "model": "tgt" if body["model"].startswith("t-") else body["model"]})


def servers(scripted_server: Any) -> dict[str, Any]:
    """One server per endpoint: each target's, the simulator's and the judge's, each logging the keys it gets."""
    return {name: scripted_server(played, models=models, log_authorization=True)
            for name, models in (("a", ("t-a",)), ("b", ("t-b",)), ("user", ("sim",)), ("judge", ("jdg",)))}


def write_plan(path: Path, srv: dict[str, Any], dataset: Path, keys: str = "") -> Path:
    path.write_text(f'dataset = "{dataset}"\nlimit = 1\nconditions = "turn1,bc"\n'
                    f'user-endpoint = "{srv["user"].base_url}"\nuser-model = "sim"\n'
                    f'judge-endpoint = "{srv["judge"].base_url}"\njudge-model = "jdg"\n{keys}'
                    + "".join(f'\n[[target]]\nname = "{t}"\nendpoint = "{srv[t].base_url}"\nmodel = "t-{t}"\n'
                              f'api-key-env = "KEY_{t.upper()}"\n' for t in ("a", "b")))
    return path


def test_a_sweep_sends_each_server_only_its_own_key(scripted_server, dataset, tmp_path, monkeypatch):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    srv, out = servers(scripted_server), tmp_path / "sweep"

    borrowed = write_plan(tmp_path / "borrowed.toml", srv, dataset)
    line = one_error_line(invoke("sweep", borrowed, "--out", out))
    assert line.startswith(f"carryon-eval: error: {borrowed}: target 'a': key 'user-api-key-env' is missing at the "
                           f"top of the plan: the user simulator sits at {srv['user'].base_url}, not at the target's "
                           f"endpoint ({srv['a'].base_url}) that $KEY_A was given for"), line
    assert all(s.authorizations == [] and s.count() == 0 for s in srv.values()) and not out.exists()

    own = write_plan(tmp_path / "own.toml", srv, dataset, 'user-api-key-env = "KEY_U"\njudge-api-key-env = "KEY_J"\n')
    result = invoke("sweep", own, "--out", out)
    assert result.exit_code == 0, result.output
    for name, key in (("a", "KEY_A"), ("b", "KEY_B"), ("user", "KEY_U"), ("judge", "KEY_J")):
        assert srv[name].count() > 0 and set(srv[name].authorizations) == {f"Bearer {KEYS[key]}"}, name
    for target in ("a", "b"):
        text = (out / target / "run.json").read_text()
        roles = json.loads(text)["roles"]
        assert {r: roles[r]["api_key_env"] for r in roles} == {"target": f"KEY_{target.upper()}", "user": "KEY_U",
                                                               "judge": "KEY_J"}
        assert not any(value in text for value in KEYS.values())

    # a run whose judge was recorded with the target's key (as runs started before keys went by endpoint were):
    # `judge RUNDIR` sends that key to the judge's server no more
    meta = json.loads((out / "a" / "run.json").read_text())
    meta["roles"]["judge"]["api_key_env"] = "KEY_A"
    (out / "a" / "run.json").write_text(json.dumps(meta))
    before = {name: len(s.authorizations) for name, s in srv.items()}
    line = one_error_line(invoke("judge", out / "a"))
    assert line.startswith("carryon-eval: error: --judge-api-key-env is missing: the judge sits at "
                           f"{srv['judge'].base_url}, not at the run's target's endpoint"), line
    moved = one_error_line(invoke("judge", out / "b", "--judge-endpoint", srv["a"].base_url, "--judge-model", "t-a"))
    assert moved.startswith("carryon-eval: error: --judge-api-key-env is missing: the judge sits at "
                            f"{srv['a'].base_url}, not at the run's judge's endpoint"), moved
    assert {name: len(s.authorizations) for name, s in srv.items()} == before


def test_a_single_run_refuses_a_judge_elsewhere_without_its_own_key(scripted_server, dataset, tmp_path, monkeypatch):
    monkeypatch.setenv("KEY_A", KEYS["KEY_A"])
    srv = servers(scripted_server)
    args = ["--endpoint", srv["a"].base_url, "--model", "t-a", "--api-key-env", "KEY_A", "--user-model", "t-a",
            "--judge-endpoint", srv["judge"].base_url, "--judge-model", "jdg", "--dataset", dataset,
            "--out", tmp_path / "run", "--limit", 1, "--conditions", "turn1"]
    line = one_error_line(invoke(*args))
    assert line == (f"carryon-eval: error: --judge-api-key-env is missing: the judge sits at {srv['judge'].base_url}, "
                    f"not at the target's endpoint ({srv['a'].base_url}) that $KEY_A was given for; a key goes only "
                    "to its own endpoint: name the environment variable that holds the judge's own key (\"\" for "
                    "none)")
    assert one_error_line(invoke(*args, "--dry-run")) == line          # before the cost table too
    assert srv["a"].authorizations == [] and srv["judge"].authorizations == [] and not (tmp_path / "run").exists()

    # "" sends none; the user simulator on the target's URL shares its key
    result = invoke(*args, "--judge-api-key-env", "")
    assert result.exit_code == 0, result.output
    assert set(srv["a"].authorizations) == {f"Bearer {KEYS['KEY_A']}"}
    assert set(srv["judge"].authorizations) == {"Bearer EMPTY"}
    roles = json.loads((tmp_path / "run" / "run.json").read_text())["roles"]
    assert (roles["target"]["api_key_env"], roles["user"]["api_key_env"], roles["judge"]["api_key_env"]) == \
        ("KEY_A", "KEY_A", "")


def test_the_python_api_refuses_a_judge_elsewhere_without_its_own_key(scripted_server, dataset, monkeypatch):
    from carryon_eval import evaluate
    from carryon_eval.api import ConfigError

    monkeypatch.setenv("KEY_A", KEYS["KEY_A"])
    srv = servers(scripted_server)
    with pytest.raises(ConfigError, match=r"^--judge-api-key-env is missing: the judge sits at "):
        evaluate(endpoint=srv["a"].base_url, model="t-a", api_key_env="KEY_A", judge_endpoint=srv["judge"].base_url,
                 judge_model="jdg", dataset=str(dataset), dry_run=True)
    assert srv["a"].authorizations == [] and srv["judge"].authorizations == []
