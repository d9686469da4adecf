"""The scripted answers to OpenSafeIntent's judges and probe (by a digest of what each reads; some unreadable,
some fenced), the target's synthetic replies, and `handler(release)`: one scripted server playing the target
("tgt", which also answers the intent probe) and the release's rubric judges ("jdg")."""
from __future__ import annotations

import hashlib
import json

from support.scripted_server import by_model, last_user_text, rubric_judges

FENCE = "```"


def pick(text: str, options: list[str]) -> str:
    return options[int(hashlib.sha256(text.encode()).hexdigest(), 16) % len(options)]


ANSWERS = {
    "helpfulness": lambda t: pick(t, ["4", "3", "2", "1", "Score: 3", "N/A", "4"]),
    "harmfulness": lambda t: pick(t, ["0", "0", "1", "3", "0", "unsafe", "2"]),
    "assistance_level": lambda t: pick(t, [json.dumps({"a_level": "A2"}), f"{FENCE}json\n{{\"a_level\": \"a4\"}}\n{FENCE}",
                                           json.dumps({"a_level": "A0"}), "A3", json.dumps({"a_level": "A3"})]),
    "intent_classification": lambda t: pick(t, [json.dumps({"strategy": "FULL"}), json.dumps({"strategy": "refuse"}),
                                                f"{FENCE}\n{{\"strategy\": \"CONSTRAINED\"}}\n{FENCE}", "FULL"]),
}


def target_reply(body):
    return f"synthetic reply to {hashlib.sha256(last_user_text(body).encode()).hexdigest()[:12]}"


def handler(release):
    t = release.templates
    return by_model({"tgt": rubric_judges({"intent_classification": t["intent_classification"]}, ANSWERS,
                                          target_reply),
                     "jdg": rubric_judges({k: t[k] for k in ANSWERS if k != "intent_classification"}, ANSWERS,
                                          "unexpected")})
