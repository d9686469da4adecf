"""Which model at which endpoint plays each role of the LLM stages (the `build` command's options).

Scheme: ``--endpoint URL --model NAME`` is the default of every role. One role is pointed elsewhere with
``--ROLE-endpoint URL`` and/or ``--ROLE-model NAME`` (ROLE with dashes, e.g. ``--harm-classifier-model``; the
older ``--role-endpoint ROLE=URL`` / ``--role-model ROLE=NAME`` still work), and its requests are shaped with
``--ROLE-max-tokens``, ``--ROLE-temperature``, ``--ROLE-reasoning-effort``, ``--ROLE-system-prompt`` and
``--ROLE-extra-body`` (carryon_eval.cli_common.request_options, named as in carryon-eval). Generators (several; the paper uses 5)
are listed with ``--generator URL=MODEL`` (repeatable) and ``--generator-model NAME`` (repeatable; at the
generator role's endpoint); the ``--generator`` entries come first. Without either, one generator: the
generator role's endpoint and model. URL may be ``local``: the embedded Gemma 3 270M (llama.cpp).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from carryon_eval import defaults
from carryon_eval.cli_common import LOCAL_ENDPOINT as LOCAL, is_local
from carryon_eval.model.keys import KeyChoice, KeyGiven, KeyRefused, assign_keys

from .llm_config import ModelSpec
from .stages import ROLES

SINGLE_ROLES = tuple(r for r in ROLES if r != "generator")


class RoleError(ValueError):
    """A bad role option; the message is one line naming the option."""


def _is_local(url: Optional[str]) -> bool:
    """The builder has no implicit default endpoint: only an explicit "local" means the embedded model."""
    return url is not None and is_local(url)


def split_assignment(value: str, option: str, *, last: bool = False) -> tuple[str, str]:
    """"KEY=VALUE" -> (KEY, VALUE); ``last`` splits at the last "=" (URL=MODEL: URLs may hold "=")."""
    key, sep, val = value.rpartition("=") if last else value.partition("=")
    key, val = key.strip(), val.strip()
    if not sep or not key or not val:
        form = "URL=MODEL" if last else "ROLE=VALUE"
        raise RoleError(f"{option} {value!r}: expected {form}")
    return key, val


def _role_map(values: Sequence[str], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        role, val = split_assignment(v, option)
        role = role.replace("-", "_")
        if role not in ROLES:
            raise RoleError(f"{option} {v!r}: unknown role {role!r}; roles: {', '.join(dict.fromkeys(ROLES))}")
        if role in out and out[role] != val:
            raise RoleError(f"{option}: role {role} given twice ({out[role]!r} and {val!r})")
        out[role] = val
    return out


@dataclass
class RolePlan:
    """Each role's (endpoint, model) before the local server (if any) is started."""
    roles: dict[str, tuple[str, str]]
    generators: list[tuple[str, str]]
    generator_at: Optional[str] = None      # the generator role's endpoint (--generator-endpoint, else --endpoint)

    @property
    def needs_local(self) -> bool:
        return any(_is_local(u) for u, _ in [*self.roles.values(), *self.generators])

    def keys(self, *, endpoint: Optional[str], api_key_env: str,
             own: Optional[Mapping[str, Optional[str]]] = None) -> tuple[dict[str, str], list[str]]:
        """Each role's and each generator's key variable ("" for none): ``own``, a role's --ROLE-api-key-env; else
        the key given for its URL (--api-key-env's for --endpoint's URL). A generator at another URL than the
        generator role's (--generator URL=MODEL) takes the key given for its URL, else --generator-api-key-env's.
        RoleError for a role on another URL with none while --api-key-env's variable is set
        (carryon_eval.model.keys: a key goes only to the endpoint it was given for)."""
        own = own or {}
        default = KeyGiven(api_key_env, () if endpoint is None or _is_local(endpoint) else (endpoint,), "--endpoint")

        def choice(name: str, role: str, url: str, **kw: Any) -> KeyChoice:
            flag = role.replace("_", "-")
            return KeyChoice(name, () if _is_local(url) else (url,), kw.pop("given", own.get(role)),
                             f"--{flag}-api-key-env", borrows=default, **kw)
        choices = [choice(f"{r.replace('_', '-')} role", r, url) for r, (url, _) in self.roles.items()]
        at = self.generator_at              # generators elsewhere (--generator URL=MODEL) take the key of their URL
        models = [model for _, model in self.generators]
        gens = [choice(f"generator {model}" + (f" (number {i + 1})" if models.count(model) > 1 else ""),
                       "generator", url, **({} if url == at else {"given": None, "otherwise": own.get("generator")}))
                for i, (url, model) in enumerate(self.generators)]
        try:
            keys = assign_keys([*choices, *gens], [default])
        except KeyRefused as exc:
            raise RoleError(str(exc)) from None
        return {r: keys[c.role] for r, c in zip(self.roles, choices)}, [keys[g.role] for g in gens]

    def specs(self, *, local_base_url: Optional[str] = None, structured: str = "json_schema",
              concurrency: int = defaults.CONCURRENCY, timeout: float = defaults.TIMEOUT,
              request: Optional[Mapping[str, Mapping[str, Any]]] = None,
              keys: Optional[tuple[dict[str, str], list[str]]] = None,
              ) -> tuple[dict[str, ModelSpec], list[ModelSpec]]:
        """``request``: each role's request options (ModelSpec's max_tokens ... extra_body); ``keys``: each role's
        and generator's key variable (``keys()``; None: every one's ModelSpec default)."""
        request = request or {}
        role_keys, gen_keys = keys or ({}, [])

        def spec(role: str, url: str, model: str, key: Optional[str]) -> ModelSpec:
            options = {k: v for k, v in (request.get(role) or {}).items() if v is not None}
            if key is not None:
                options["api_key_env"] = key
            if _is_local(url):
                return ModelSpec(base_url=local_base_url or LOCAL, model=model, structured="json_object",
                                 concurrency=defaults.LOCAL_CONCURRENCY,
                                 timeout=max(timeout, defaults.LOCAL_TIMEOUT), local=True, **options)
            return ModelSpec(base_url=url, model=model, structured=structured, concurrency=concurrency,
                             timeout=timeout, **options)
        return ({r: spec(r, *v, role_keys.get(r)) for r, v in self.roles.items()},
                [spec("generator", *g, gen_keys[i] if i < len(gen_keys) else None)
                 for i, g in enumerate(self.generators)])


def plan_roles(*, endpoint: Optional[str], model: Optional[str], role_endpoints: Sequence[str] = (),
               role_models: Sequence[str] = (), generators: Sequence[str] = (),
               generator_models: Sequence[str] = (), local_model: str = "gemma-3-270m") -> RolePlan:
    """Resolve the options into one (endpoint, model) per role and the list of generators."""
    eps = _role_map(role_endpoints, "--role-endpoint")
    models = _role_map(role_models, "--role-model")

    def resolve(role: str) -> tuple[str, str]:
        url = eps.get(role, endpoint)
        if url is None:
            raise RoleError(f"no endpoint for role {role}: pass --endpoint URL (or local), or "
                            f"--role-endpoint {role}=URL")
        name = models.get(role, model)
        if name is None:
            if _is_local(url):
                name = local_model
            else:
                raise RoleError(f"no model for role {role}: pass --model NAME, or --role-model {role}=NAME")
        return url, name

    roles = {r: resolve(r) for r in SINGLE_ROLES}
    gens: list[tuple[str, str]] = [split_assignment(g, "--generator", last=True) for g in generators]
    if generator_models:
        url, _ = resolve_endpoint_only(eps.get("generator", endpoint), "generator")
        gens += [(url, name) for name in generator_models]
    if not gens:
        gens = [resolve("generator")]
    return RolePlan(roles=roles, generators=gens, generator_at=eps.get("generator", endpoint))


def resolve_endpoint_only(url: Optional[str], role: str) -> tuple[str, None]:
    if url is None:
        raise RoleError(f"--generator-model needs an endpoint: pass --endpoint URL (or local), or "
                        f"--role-endpoint {role}=URL")
    return url, None
