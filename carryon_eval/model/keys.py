"""Which API key each role sends: a key goes only to the endpoint it was given for.

A role's key is the environment variable named for it (``--judge-api-key-env``, a plan's ``judge-api-key-env``,
a builder role's ``--<role>-api-key-env``; an empty name sends none). A role given none takes the key
given for its endpoint: the one named for another role on the same base URL, or the default role's (the
target's, the builder's ``--endpoint``) when it sits on that role's URL. A role on any other URL gets nobody
else's key: it is refused (``KeyRefused``, one line naming the option that sets its key) while the key it would
once have borrowed is set in the environment, and runs without a key when that variable is unset (no value
could travel). Roles on the embedded model send none.

    target = KeyGiven("KEY_A", (t_url,), "the target's endpoint")
    keys = assign_keys([KeyChoice("judge", (j_url,), None, "--judge-api-key-env", borrows=target)], [target])
    keys["judge"]      # "KEY_A" if j_url is t_url; else "" when KEY_A is unset, KeyRefused when it is set

Every command that makes endpoints (a run, a sweep, the Python API, ``judge``/``fidelity``/``rollout RUNDIR``, the
builder) resolves its roles' keys here; run.json records the variable each role used (never its value).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Sequence
from urllib.parse import urlsplit

from carryon_eval.model.redact import public_url


@dataclass(frozen=True)
class KeyGiven:
    """A key variable and the endpoint it was given for."""
    env: str                    # the variable's name ("": no key)
    urls: tuple[str, ...]       # the base URL(s) it was given for; (): a role on the embedded model
    whose: str = "the target's endpoint"    # the endpoint it was given for, as a message names it


@dataclass(frozen=True)
class KeyChoice:
    """One role's endpoint, the key variable given for it, and the one it would otherwise borrow."""
    role: str                   # as the message names it: "judge", "user simulator", "harm-classifier role"
    urls: tuple[str, ...]       # its base URL(s) (an endpoint pool has several); (): the embedded model, no key
    given: Optional[str]        # the variable named for this role; None: none given ("": send no key)
    option: str                 # the option that names it ("--judge-api-key-env"), for the message
    keyword: str = ""           # its keyword (judge_api_key_env): a plan names it as a key
    borrows: Optional[KeyGiven] = None     # the key a role given none used to take (the target's)
    otherwise: Optional[str] = None        # its own key where none was given for its URL (the builder's generators)


class KeyRefused(ValueError):
    """A role on another endpoint than the key it would borrow: one line, ``str()`` names the option;
    ``keyword`` and ``reason`` let a plan reader name its own key instead."""

    def __init__(self, option: str, keyword: str, reason: str) -> None:
        super().__init__(f"{option} is missing: {reason}")
        self.option, self.keyword, self.reason = option, keyword, reason


def endpoint_of(url: str) -> tuple[str, str, int, str]:
    """A base URL as one endpoint: scheme, host and port (the scheme's default when none) and path, without
    case or a trailing slash differing."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme, 0)
    except ValueError:
        port = 0
    return scheme, (parts.hostname or "").lower(), port, parts.path.rstrip("/")


def same_endpoints(urls: Sequence[str], of: Sequence[str]) -> bool:
    """Whether every URL of ``urls`` is one of the endpoints ``of``."""
    known = {endpoint_of(u) for u in of}
    return bool(urls) and all(endpoint_of(u) in known for u in urls)


def assign_keys(choices: Sequence[KeyChoice], known: Sequence[KeyGiven] = ()) -> dict[str, str]:
    """role -> the key variable it sends ("" for none). ``known``: keys given for endpoints besides the
    choices' own (the target's; a run folder's recorded roles). KeyRefused for a role on another URL with no
    key of its own while the key it borrows is set."""
    given_for = [KeyGiven(c.given, c.urls) for c in choices if c.urls and c.given is not None]
    given_for += [k for k in known if k.urls]
    keys: dict[str, str] = {}
    for choice in choices:
        if not choice.urls:
            keys[choice.role] = ""
        elif choice.given is not None:
            keys[choice.role] = choice.given
        else:
            found = next((k.env for k in given_for if same_endpoints(choice.urls, k.urls)), choice.otherwise)
            keys[choice.role] = found if found is not None else _keyless(choice)
    return keys


def _keyless(choice: KeyChoice) -> str:
    """"" (no key) for a role no key was given for; KeyRefused when the key it would borrow is set."""
    lent = choice.borrows
    if lent is None or not lent.env or not os.environ.get(lent.env):
        return ""
    where = ", ".join(str(public_url(u)) for u in choice.urls)
    theirs = f"not at {lent.whose} ({', '.join(str(public_url(u)) for u in lent.urls)}) that ${lent.env} was " \
             "given for" if lent.urls else f"and ${lent.env} was given for {lent.whose}, the embedded model"
    raise KeyRefused(choice.option, choice.keyword,
                     f"the {choice.role} sits at {where}, {theirs}; a key goes only to its own endpoint: name "
                     f"the environment variable that holds the {choice.role}'s own key (\"\" for none)")


__all__ = ["KeyChoice", "KeyGiven", "KeyRefused", "assign_keys", "endpoint_of", "same_endpoints"]
