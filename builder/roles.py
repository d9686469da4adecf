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
            raise RoleError(f"{option} {v!r}: unknown role {role!r}; roles: {', '.join(ROLES)}")
        if role in out and out[role] != val:
            raise RoleError(f"{option}: role {role} given twice ({out[role]!r} and {val!r})")
        out[role] = val
    return out


@dataclass
class RolePlan:
    """Each role's (endpoint, model) before the local server (if any) is started."""
    roles: dict[str, tuple[str, str]]
    generators: list[tuple[str, str]]

    @property
    def needs_local(self) -> bool:
        return any(_is_local(u) for u, _ in [*self.roles.values(), *self.generators])

    def specs(self, *, local_base_url: Optional[str] = None, structured: str = "json_schema",
              concurrency: int = defaults.CONCURRENCY, timeout: float = defaults.TIMEOUT,
              request: Optional[Mapping[str, Mapping[str, Any]]] = None,
              ) -> tuple[dict[str, ModelSpec], list[ModelSpec]]:
        """``request``: each role's request options (ModelSpec's max_tokens ... extra_body)."""
        request = request or {}

        def spec(role: str, url: str, model: str) -> ModelSpec:
            options = {k: v for k, v in (request.get(role) or {}).items() if v is not None}
            if _is_local(url):
                return ModelSpec(base_url=local_base_url or LOCAL, model=model, structured="json_object",
                                 concurrency=defaults.LOCAL_CONCURRENCY,
                                 timeout=max(timeout, defaults.LOCAL_TIMEOUT), local=True, **options)
            return ModelSpec(base_url=url, model=model, structured=structured, concurrency=concurrency,
                             timeout=timeout, **options)
        return ({r: spec(r, *v) for r, v in self.roles.items()}, [spec("generator", *g) for g in self.generators])


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
    return RolePlan(roles=roles, generators=gens)


def resolve_endpoint_only(url: Optional[str], role: str) -> tuple[str, None]:
    if url is None:
        raise RoleError(f"--generator-model needs an endpoint: pass --endpoint URL (or local), or "
                        f"--role-endpoint {role}=URL")
    return url, None
