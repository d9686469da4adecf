"""A credential written inside an endpoint URL (user:password@, or a query value) is masked wherever the URL is
recorded or said (run.json's roles and pool, judge.json's judge, error lines), and registered so that an echo of
it is masked too."""
from __future__ import annotations

import json

from carryon_eval.model.client import Endpoint
from carryon_eval.model.endpoint import EndpointConfig
from carryon_eval.model.redact import MASK, redact
from carryon_eval.run.records import RoleRecord

SECRET, TOKEN = "url-secret-0123456789", "query-token-0123456789"


def test_a_credential_in_an_endpoint_url_is_masked_in_what_is_recorded():
    url = f"https://user:{SECRET}@llm.example/v1?api_key={TOKEN}"
    config = EndpointConfig(base_url=url, model="m")
    record = RoleRecord.of(config, local=False, pool=(url, "https://other.example/v1"))
    text = json.dumps(record.to_json()) + json.dumps(config.public())      # run.json's role, judge.json's judge
    assert SECRET not in text and TOKEN not in text
    assert config.public()["base_url"] == f"https://{MASK}@llm.example/v1?api_key={MASK}"
    assert list(record.pool) == [config.public()["base_url"], "https://other.example/v1"]
    assert SECRET not in Endpoint(config)._where()
    assert redact(f"echo {SECRET} {TOKEN}") == f"echo {MASK} {MASK}"
