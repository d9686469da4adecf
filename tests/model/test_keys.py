"""carryon_eval.model.keys: which key variable a role sends. A role given none takes the key given for its URL
(the same endpoint however the URL is spelled), runs keyless where none was given and none could be borrowed, and
is refused where it would borrow a key that is set."""
from __future__ import annotations

import pytest

from carryon_eval.model.keys import KeyChoice, KeyGiven, KeyRefused, assign_keys, same_endpoints

TARGET = KeyGiven("KEY_T", ("https://api.example.com/v1",))


def judge(*urls: str, given=None, **kw) -> KeyChoice:
    return KeyChoice("judge", urls, given, "--judge-api-key-env", borrows=TARGET, **kw)


def test_the_same_endpoint_however_spelled():
    assert same_endpoints(["HTTPS://API.example.com:443/v1/"], ["https://api.example.com/v1"])
    assert not same_endpoints(["https://api.example.com/v2"], ["https://api.example.com/v1"])
    assert not same_endpoints(["http://127.0.0.1:8001/v1"], ["http://127.0.0.1:8000/v1"])
    assert not same_endpoints([], ["https://api.example.com/v1"])


def test_a_role_takes_the_key_given_for_its_url_only(monkeypatch):
    monkeypatch.setenv("KEY_T", "sk-t")
    user = KeyChoice("user simulator", ("https://sim.example/v1",), "KEY_U", "--user-api-key-env", borrows=TARGET)
    assert assign_keys([judge("https://api.example.com/v1/")], [TARGET]) == {"judge": "KEY_T"}
    assert assign_keys([user, judge("https://sim.example/v1")], [TARGET])["judge"] == "KEY_U"
    assert assign_keys([judge("https://other.example/v1", given="")], [TARGET]) == {"judge": ""}
    assert assign_keys([judge()], [TARGET]) == {"judge": ""}               # the embedded model: no key
    with pytest.raises(KeyRefused) as refused:
        assign_keys([judge("https://api.example.com/v1", "https://other.example/v1")], [TARGET])  # a pool
    assert refused.value.keyword == "" and str(refused.value).startswith("--judge-api-key-env is missing: the judge "
                                                                          "sits at https://api.example.com/v1, "
                                                                          "https://other.example/v1, not at")


def test_where_the_borrowed_key_is_unset_the_role_runs_keyless(monkeypatch):
    monkeypatch.delenv("KEY_T", raising=False)
    assert assign_keys([judge("https://other.example/v1")], [TARGET]) == {"judge": ""}
    assert assign_keys([judge("https://other.example/v1", otherwise="KEY_G")], [TARGET]) == {"judge": "KEY_G"}
