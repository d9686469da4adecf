"""What a run will cost before it is paid: calls and tokens per role and condition, from the run's own plans.

    table = estimate(bench, jobs, caps, scoring=ScoringPlan.of(conditions), run=run, judge_model="gpt-x")
    print("\n".join(format_table(table, prices={"judge": Price(0.15, 0.60)})))
    json.dumps(table.to_json())                                        # --dry-run --json

The counts come from the plans the run executes, not from a second model of them:

- target and user: the suites' jobs (carryon_eval.suite.plan_jobs), played as carryon_eval.rollout.play plays
  them: one call for a job's opening prompt (the prompt actually sent), or one per shared first reply (jobs
  with the same ``shares`` key), and for each follow-up move one user-simulator call and one target call.
  Jobs already in transcripts.jsonl are counted as ``cached`` (their calls are paid); a shared first reply
  whose owner transcript exists is reused, as the rollout reuses it.
- judge: the judge phase's own walk of the cases (carryon_eval.judge.phase.reply_cases, what plan_tasks plans)
  over the run's transcripts, counted rather than planned (a case is told apart by its hash; a paper-scale plan has
  hundreds of thousands), with a placeholder reply, different for every reply, standing in for each reply still to
  be generated (its prompt rendered once per reply-less case, the reply at its cap). So the
  figure is exact when no two replies of the target are identical and every answer parses at the first
  attempt (identical replies are judged once, so a real run can only need fewer; retries of unparseable
  answers come on top). Judgments already stored are ``cached``. "before dedupe" counts every record.
- calls that depend on the verdicts (a suite's probes, e.g. the risk probe) are listed under ``up_to``.

Tokens are estimates at about four characters per token: prompts from the dataset's real text and the prompt
files; replies and simulated user turns at their token caps (upper bounds); judge answers at the length of their
form (a yes/no or 1-5 answer is a few tokens, not the cap). ``--price ROLE=IN/OUT`` (USD per 1M tokens) turns
them into a cost; priced calls are the new ones only. A third rate (``judge=0.15/0.60/0.075``) prices the prompt
tokens a provider served from its prompt cache: the estimate cannot know them (it prices every prompt token at
the prompt rate), but the usage a run records (run.json's ``usage``, the summary line) is priced with it.
"""
from __future__ import annotations

import dataclasses
import math
import operator
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from carryon_eval.codec import OMIT_NONE, Record, fields_of, json_keys
from carryon_eval.dataset.load import Benchmark
from carryon_eval.judge.costing import CostNote, cost_notes
from carryon_eval.judge.phase import reply_cases
from carryon_eval.judge.scorer_file import ScorerRecords
from carryon_eval.judge.scorers import Case, pick_replies, planned_uses, reply_scorers, reply_shape
from carryon_eval.model.endpoint import Tokens
from carryon_eval.prompts import load_prompt
from carryon_eval.rollout.simulator import SHOWN_REPLY_CHARS, move_prompt, move_values
from carryon_eval.run.folder import RunFolder
from carryon_eval.run.records import JudgeSettings, RunMeta
from carryon_eval.schema import Message, Transcript
from carryon_eval.suite import DesignView, Job, ScoringPlan, all_conditions, selected

ROLES = ("target", "user", "judge")
CHARS_PER_TOKEN = 4
PLACEHOLDER = "\x00reply:"      # a reply still to be generated (never a real reply's text)
_PRICE = re.compile(r"^\s*(target|user|judge)\s*=\s*([0-9.]+)\s*/\s*([0-9.]+)\s*(?:/\s*([0-9.]+)\s*)?$")


def tokens(text: str) -> int:
    """A rough token count (about four characters per token)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


# ---------------------------------------------------------------- settings and the table
@dataclass(frozen=True)
class Caps:
    """The token caps and switches a run uses: run.json's generation caps and its judge settings themselves (the
    judge's cap is theirs)."""
    target: int
    user: int
    settings: JudgeSettings = field(default_factory=JudgeSettings)
    shared_turn1: bool = True

    @property
    def judge(self) -> int:
        return self.settings.max_tokens



@dataclass
class Row:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: int = 0                 # calls of the plan already paid (in the run folder)

    def add(self, calls: int, prompt: int, completion: int) -> None:
        self.calls += calls
        self.prompt_tokens += prompt
        self.completion_tokens += completion

    def to_json(self) -> dict[str, int]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, int]) -> "Row":
        return cls(**{f.name: int(d.get(f.name) or 0) for f in dataclasses.fields(cls)})


@dataclass
class Estimate:
    """Rows per (role, condition) of the calls still to make; ``up_to`` the calls that depend on verdicts."""
    rows: dict[tuple[str, str], Row] = field(default_factory=dict)
    judge_before_dedupe: dict[str, int] = field(default_factory=dict)   # condition -> records still to judge
    judge_by_scorer: dict[str, int] = field(default_factory=dict)       # scorer -> calls still to make
    up_to: dict[tuple[str, str], int] = field(default_factory=dict)     # (role, probe) -> at most this many
    conversations: int = 0
    #: what the wings add (judge.costing.CostNote): JSON keys after up_to, lines after the up_to lines
    notes: list[CostNote] = field(default_factory=list)

    def row(self, role: str, condition: str) -> Row:
        return self.rows.setdefault((role, condition), Row())

    def calls(self, role: Optional[str] = None) -> int:
        return sum(r.calls for (ro, _), r in self.rows.items() if role is None or ro == role)

    def of_role(self, role: str) -> list[tuple[str, Row]]:
        """A role's rows by condition, in the suites' order of conditions (registry.all_conditions), any other
        after them."""
        order = {c: i for i, c in enumerate(all_conditions())}
        return sorted(((c, r) for (ro, c), r in self.rows.items() if ro == role),
                      key=lambda cr: order.get(cr[0], len(order)))

    def total(self, role: str) -> Row:
        """A role's rows summed (its "all" row)."""
        out = Row()
        for _, r in self.of_role(role):
            out.add(r.calls, r.prompt_tokens, r.completion_tokens)
            out.cached += r.cached
        return out

    def to_json(self) -> dict[str, Any]:
        roles: dict[str, Any] = {}
        for role in ROLES:
            mine = self.of_role(role)
            if mine:
                roles[role] = {**{c: r.to_json() for c, r in mine}, ALL: self.total(role).to_json()}
        up: dict[str, dict[str, int]] = {}
        for (role, probe), n in self.up_to.items():
            up.setdefault(role, {})[probe] = n
        return {"conversations_to_run": self.conversations, "roles": roles, "judge_by_scorer": self.judge_by_scorer,
                "judge_records_before_dedupe": sum(self.judge_before_dedupe.values()), "up_to": up,
                **{k: v for note in self.notes for k, v in note.json.items()},
                "note": ESTIMATE_NOTE}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Estimate":
        """An estimate as ``--dry-run --json`` wrote it: its rows, judge calls per scorer, up_to calls and the wings'
        keys (one note, without its printed lines, which the JSON does not hold). The JSON holds the judge records
        before dedupe in total only: they are read back under ``ALL`` (what every reader of them sums). A priced
        estimate's ``usd`` is its prices' view of the rows, not part of the estimate: it is not read back."""
        written = _Written.from_json(d)
        rows = {(role, cond): r for role, conds in written.roles.items() for cond, r in conds.items() if cond != ALL}
        up_to = {(role, probe): n for role, probes in written.up_to.items() for probe, n in probes.items()}
        extra = {k: v for k, v in d.items() if k not in _ESTIMATE_KEYS}
        return cls(rows, {ALL: written.judge_records_before_dedupe}, dict(written.judge_by_scorer), up_to,
                   written.conversations_to_run, [CostNote(json=extra)] if extra else [])


@dataclass(frozen=True)
class _Written(Record):
    """What Estimate.to_json writes of its own (the wings' keys and the prices' ``usd`` beside them)."""
    conversations_to_run: int = 0
    roles: dict[str, dict[str, Row]] = field(default_factory=dict)     # role -> condition (and "all") -> its row
    judge_by_scorer: dict[str, int] = field(default_factory=dict)
    judge_records_before_dedupe: int = 0
    up_to: dict[str, dict[str, int]] = field(default_factory=dict)
    note: str = ""


ALL = "all"     # a role's total row (and the judge records before dedupe read back from the JSON)
ESTIMATE_NOTE = ("calls are the ones still to make; cached ones are already paid. The judge calls are exact when no "
                 "two target replies are identical (identical replies are judged once) and every answer parses at "
                 "the first attempt; up_to calls depend on the verdicts.")
#: the keys of Estimate.to_json's object (and the price's "usd"); any other key is a wing's (its CostNote's)
_ESTIMATE_KEYS = (*json_keys(_Written), "usd")


@dataclass(frozen=True)
class Price(Record):
    """USD per 1M prompt (in) and completion (out) tokens; ``cached``: per 1M prompt tokens the provider served
    from its prompt cache (None: at the prompt rate)."""
    input: float
    output: float
    cached: Optional[float] = None

    def cost(self, row: Row) -> float:
        """An estimate's row: its prompt tokens are all priced at the prompt rate (the estimate cannot know
        which prefixes a provider will have cached)."""
        return (row.prompt_tokens * self.input + row.completion_tokens * self.output) / 1e6

    def spent(self, usage: "RoleUsage") -> float:
        """USD of recorded usage (usage.json's rows summed per role): cached prompt tokens at the cached rate."""
        cached = usage.cached_prompt_tokens
        rate = self.input if self.cached is None else self.cached
        return ((usage.prompt_tokens - cached) * self.input + cached * rate + usage.completion_tokens * self.output) / 1e6

    @classmethod
    def from_json(cls, d: Any) -> "Price":
        """A price as run.json records it (its rates read as floats)."""
        read = fields_of(cls, d)
        return cls(float(read.input), float(read.output), None if read.cached is None else float(read.cached))


def parse_prices(values: Iterable[str]) -> dict[str, Price]:
    """``ROLE=IN/OUT[/CACHED]`` strings (``judge=0.15/0.60/0.075``) -> {role: Price}; ValueError names the bad one."""
    prices: dict[str, Price] = {}
    spelled: dict[str, str] = {}
    for value in values:
        m = _PRICE.match(value)
        if m is None:
            raise ValueError(f"--price {value!r}: expected ROLE=IN/OUT[/CACHED] with ROLE one of {', '.join(ROLES)} "
                             "and USD per 1M tokens, e.g. judge=0.15/0.60 or judge=0.15/0.60/0.075")
        if m.group(1) in spelled:       # never "the later wins": which one did the user mean?
            raise ValueError(f"--price {value!r}: the {m.group(1)} role is priced twice (also --price "
                             f"{spelled[m.group(1)]!r}); give one --price per role")
        spelled[m.group(1)] = value
        prices[m.group(1)] = Price(float(m.group(2)), float(m.group(3)),
                                   float(m.group(4)) if m.group(4) is not None else None)
    return prices


@dataclass
class RoleUsage(Record):
    """One role's calls and tokens summed over usage.json's rows (run.json's ``usage``), with ``usd`` where priced."""
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    usd: Optional[float] = field(default=None, metadata=OMIT_NONE)
    price_per_1m: Optional[Price] = field(default=None, metadata=OMIT_NONE)

    def add(self, row: Tokens) -> None:
        for name in _COUNTS:
            setattr(self, name, getattr(self, name) + int(getattr(row, name)))


_COUNTS = tuple(f.name for f in dataclasses.fields(RoleUsage) if f.type == "int")


def usage_by_role(rows: dict[str, dict[str, int]], prices: Optional[dict[str, Price]] = None) -> dict[str, RoleUsage]:
    """usage.json's rows ("stage/model") summed per role (target, user, judge), with ``usd`` where priced:
    what run.json's ``usage`` and the summary line report."""
    from carryon_eval.progress import role_of
    out: dict[str, RoleUsage] = {}
    for name, row in rows.items():
        out.setdefault(role_of(name.split("/", 1)[0]), RoleUsage()).add(Tokens.from_json(row))
    for role, price in (prices or {}).items():
        if role in out:
            out[role].usd, out[role].price_per_1m = round(price.spent(out[role]), 6), price
    order = {r: i for i, r in enumerate(ROLES)}
    return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], 9), kv[0])))


# ---------------------------------------------------------------- rollout: the jobs as the rollout plays them
class _Rollout:
    def __init__(self, bench: Benchmark, caps: Caps, table: Estimate) -> None:
        self.bench, self.caps, self.table = bench, caps, table
        self.shared_req = tokens(load_prompt("user_simulator/shared_requirements").render())
        self.shown_reply = min(caps.target, math.ceil(SHOWN_REPLY_CHARS / CHARS_PER_TOKEN))

    def call(self, role: str, condition: str, prompt: int, *, cached: bool, reply_cap: Optional[int] = None) -> None:
        row = self.table.row(role, condition)
        if cached:
            row.cached += 1
        else:
            row.add(1, prompt, (reply_cap or self.caps.target) if role == "target" else self.caps.user)

    def job(self, job: Job, *, first_paid: Optional[bool], cached: bool) -> None:
        """One job's calls; ``first_paid`` None: its first reply is its own; True/False: a shared first reply
        that this job pays for (the first job of its key) or not."""
        opening = tokens(job.prompt)
        cap = job.generation.max_tokens if job.generation is not None and job.generation.max_tokens else None
        if first_paid is None or first_paid:
            self.call("target", job.condition, opening, cached=cached, reply_cap=cap)
        history = opening + (cap or self.caps.target)
        if not job.moves:
            return
        q = self.bench.queries[job.query_id]
        shown = tokens(q["query"]) + self.shown_reply
        for move in job.moves:
            values = {"query": q["query"], "conversation": "", **move_values(move, q, job.intent)}
            rendered = move_prompt(move, job.intent).render(**values)
            self.call("user", job.condition, tokens(rendered) + self.shared_req + shown, cached=cached)
            history += self.caps.user
            self.call("target", job.condition, history, cached=cached, reply_cap=cap)
            history += cap or self.caps.target
            shown += self.caps.user + self.shown_reply


def _first_reply_keys(jobs: Sequence[Job], existing: dict[str, Transcript], done: set[str]) -> set[str]:
    """The shares keys whose first reply the rollout generates: some job of the key is still to run and
    no owner transcript (conversation_id == key) is there to reuse."""
    return {j.shares for j in jobs if j.shares is not None and j.conversation_id not in done
            and j.shares not in existing}


# ---------------------------------------------------------------- the judge: the judge phase's plan
def _placeholder_transcript(job: Job) -> Transcript:
    """The transcript a job will produce, with a distinct placeholder for every reply (its shared first
    reply keyed by the shares key, as the real text is the same in every conversation that shares it)."""
    first = job.shares or job.conversation_id
    msgs = [Message("user", job.prompt, 1), Message("assistant", f"{PLACEHOLDER}{first}:1", 1)]
    for turn, move in enumerate(job.moves, start=2):
        msgs += [Message("user", f"{PLACEHOLDER}user:{job.conversation_id}:{turn}", turn, move=move),
                 Message("assistant", f"{PLACEHOLDER}{job.conversation_id}:{turn}", turn)]
    return Transcript(conversation_id=job.conversation_id, query_id=job.query_id, condition=job.condition,
                      flow_id=job.flow_id, moves=list(job.moves), messages=msgs, target_model="",
                      shared_turn1=job.shares is not None)


@dataclass
class _Counted:
    """One scorer's judge calls still to make, counted as the judge phase plans them (one call per distinct case
    with a record not stored yet, booked to the condition where the case first comes), without planning them."""
    rows: dict[str, Row] = field(default_factory=dict)       # condition -> the new calls
    before: dict[str, int] = field(default_factory=dict)     # condition -> records still to judge
    cached: dict[str, int] = field(default_factory=dict)     # condition -> distinct cases whose records are all stored

    def total(self) -> Row:
        out = Row()
        for r in self.rows.values():
            out.add(r.calls, r.prompt_tokens, r.completion_tokens)
        return out


def _count(transcripts: Sequence[Transcript], bench: Benchmark, scorers: Sequence[Any], kept: dict[str, set[Any]],
           scoring: ScoringPlan, cost: Callable[[Any, Case, str], tuple[int, int]]) -> dict[str, _Counted]:
    """Each scorer's calls still to make over ``transcripts`` (judge.phase.reply_cases, the walk plan_tasks makes):
    cases are told apart by their hash, so that the count holds no case, task or prompt (a paper-scale plan has
    hundreds of thousands); ``cost``: (prompt, answer) tokens of one case of a conversation."""
    out = {s.name: _Counted() for s in scorers}
    first: dict[str, dict[int, str]] = {s.name: {} for s in scorers}          # new case -> its condition
    stored: dict[str, dict[int, str]] = {s.name: {} for s in scorers}         # cases with a stored record
    last: Any = None
    for scorer, tr, target, case in reply_cases(transcripts, bench, scorers, scoring):
        if case is not last:                  # one case for many targets (a group of items): hashed once
            last, key = case, hash(case)
        name, mine = scorer.name, out[scorer.name]
        if target in kept[name]:
            stored[name].setdefault(key, tr.condition)
            continue
        cond = first[name].get(key)
        if cond is None:
            cond = first[name][key] = tr.condition
            mine.rows.setdefault(cond, Row()).add(1, *cost(scorer, case, tr.conversation_id))
        mine.before[cond] = mine.before.get(cond, 0) + 1
    for name, cases in stored.items():           # the cases whose every record is stored already
        for key, cond in cases.items():
            if key not in first[name]:
                out[name].cached[cond] = out[name].cached.get(cond, 0) + 1
    return out


_BESIDE_REPLY = operator.attrgetter(*(f.name for f in dataclasses.fields(Case) if f.name != "reply"))


class _PromptTokens:
    """(prompt, answer) tokens of one judge call, a reply still to come standing in at its cap: its prompt is
    rendered once per scorer and reply-less case (a query's checklist item, say), not once per reply."""

    def __init__(self, caps: Caps, reply_caps: Optional[dict[str, int]]) -> None:
        self.caps, self.reply_caps = caps, reply_caps or {}
        self._blank: dict[tuple[Any, ...], int] = {}
        self._answers: dict[str, int] = {}

    def __call__(self, scorer: Any, case: Case, conversation_id: str) -> tuple[int, int]:
        cap = self.reply_caps.get(conversation_id, self.caps.target)
        if hasattr(scorer, "answer_tokens_of"):
            answer = scorer.answer_tokens_of(case)
        else:
            answer = self._answers.get(scorer.name)
            if answer is None:
                answer = self._answers[scorer.name] = reply_shape(scorer).answer_tokens
        content = getattr(scorer, "content", None)
        if not case.reply.startswith(PLACEHOLDER):
            return tokens(content(case) if content else case.reply), answer
        key = (scorer.name, _BESIDE_REPLY(case))
        blank = self._blank.get(key)
        if blank is None:
            blank = self._blank[key] = tokens(content(dataclasses.replace(case, reply=""))) if content else 0
        return blank + cap, answer


def _judge(table: Estimate, bench: Benchmark, transcripts: list[Transcript], caps: Caps, scoring: ScoringPlan,
           run: Optional[RunFolder], judge_model: str, reply_caps: Optional[dict[str, int]] = None,
           jobs: Optional[Sequence[Job]] = None) -> None:
    settings = caps.settings
    planned = planned_uses(scoring, settings)
    scorers = reply_scorers(planned.scorers, settings)
    pick_replies(scorers, jobs)
    cost = _PromptTokens(caps, reply_caps)
    counted = _count(transcripts, bench, scorers, {s.name: _kept(run, s, judge_model) for s in scorers}, planned,
                     cost)
    for s in scorers:
        mine = counted[s.name]
        for cond, row in mine.rows.items():
            table.row("judge", cond).add(row.calls, row.prompt_tokens, row.completion_tokens)
        for cond, n in mine.before.items():
            table.judge_before_dedupe[cond] = table.judge_before_dedupe.get(cond, 0) + n
        for cond, n in mine.cached.items():
            table.row("judge", cond).cached += n
        table.judge_by_scorer[s.name] = mine.total().calls
    view = _View(settings, planned, {n: c.total() for n, c in counted.items()},
                 lambda scorer, other, moded: _other_plan(scorer, other, moded, transcripts, bench, cost, run,
                                                          judge_model))


    table.notes = cost_notes(view)


def _kept(run: Optional[RunFolder], scorer: Any, judge_model: str) -> set[Any]:
    return set(ScorerRecords(run, scorer, judge_model).kept) if run is not None and run.exists() else set()


def _other_plan(name: str, plan: ScoringPlan, settings: JudgeSettings, transcripts: list[Transcript],
                bench: Benchmark, cost: Callable[[Any, Case, str], tuple[int, int]], run: Optional[RunFolder],
                judge_model: str) -> Row:
    """The calls still to make of scorer ``name`` under other settings and plan than the run's (a CostView's),
    counted as the run's own are (``_count``)."""
    (scorer,) = reply_scorers([name], settings)
    return _count(transcripts, bench, [scorer], {name: _kept(run, scorer, judge_model)}, plan, cost)[name].total()


@dataclass
class _View:
    """judge.costing.CostView of the run's judge plan."""
    settings: JudgeSettings
    scoring: Any
    rows: dict[str, Row]
    other: Callable[[str, Any, JudgeSettings], Row]

    def counted(self, scorer: str) -> Optional[Row]:
        return self.rows.get(scorer)

    def estimate(self, scorer: str, plan: Any, settings: JudgeSettings) -> Row:
        return self.other(scorer, plan, settings)


# ---------------------------------------------------------------- the estimate
def estimate(bench: Benchmark, jobs: Sequence[Job], caps: Caps, *, scoring: ScoringPlan,
             run: Optional[RunFolder] = None, judge_model: str = "", conditions: Sequence[str] = ()) -> Estimate:
    """The calls and tokens of running ``jobs`` (those not yet in ``run``'s transcripts) and of judging every
    reply of the plan; see the module docstring. ``conditions`` selects the suites whose probes are listed."""
    existing = {t.conversation_id: t for t in run.transcripts()} if run is not None and run.exists() else {}
    done = set(existing)
    table = Estimate()
    todo = [j for j in jobs if j.conversation_id not in done]
    table.conversations = len(todo)
    rollout = _Rollout(bench, caps, table)
    to_generate = _first_reply_keys(jobs, existing, done)
    paid: set[str] = set()
    for job in jobs:                         # plan order: a shared reply is booked to its first job to run
        if job.conversation_id in done:
            owner = job.shares is not None and job.conversation_id == job.shares
            rollout.job(job, first_paid=None if job.shares is None else owner, cached=True)
        elif job.shares is None:
            rollout.job(job, first_paid=None, cached=False)
        else:
            first = job.shares in to_generate and job.shares not in paid
            paid.add(job.shares)
            rollout.job(job, first_paid=first, cached=False)
    transcripts = [existing[j.conversation_id] if j.conversation_id in done else _placeholder_transcript(j)
                   for j in jobs]
    own = {j.conversation_id: j.generation.max_tokens for j in jobs
           if j.generation is not None and j.generation.max_tokens}
    _judge(table, bench, transcripts, caps, scoring, run, judge_model, own, jobs)
    for suite in selected(conditions):
        mine = [j for j in jobs if j.condition in suite.conditions]
        for probe in suite.probes:
            table.up_to[(probe.role, probe.name)] = probe.up_to(mine)
    return table


def run_cost_table(bench: Benchmark, jobs: Sequence[Job], meta: RunMeta, run: Optional[RunFolder],
                   prices: Iterable[str], *, as_json: bool = False, design: Optional[DesignView] = None) -> Any:
    """The table of a run's settings (run.json's caps and switches) as lines, or its JSON object, with what each
    suite says of the run's design (``Suite.design``: e.g. the smallest differences it detects); ValueError names
    a bad --price."""
    priced = parse_prices(prices)
    caps = Caps(target=meta.generation.target.max_tokens, user=meta.generation.user.max_tokens, settings=meta.judge,
                shared_turn1=meta.shared_turn1)
    table = estimate(bench, jobs, caps, scoring=ScoringPlan.of(meta.conditions), run=run,
                     judge_model=meta.role("judge").model or "", conditions=meta.conditions)
    view = design or DesignView(jobs)
    for suite in (s for s in selected(meta.conditions) if s.design is not None):
        note = suite.design(DesignView([j for j in view.jobs if j.condition in suite.conditions], view.power_from,
                                       view.detect))
        if note is not None:
            table.notes.append(CostNote(json=dict(note.json), lines=tuple(note.lines)))
    if as_json:
        out = table.to_json()
        if priced:
            out["usd"] = {role: price.cost(table.total(role)) for role, price in priced.items()}
        return out
    return format_table(table, priced)


# ---------------------------------------------------------------- the printed table
def format_table(table: Estimate, prices: Optional[dict[str, Price]] = None) -> list[str]:
    """The table as lines: one per role and condition, then per role and in total."""
    prices = prices or {}
    head = f"{'role':<7} {'condition':<14} {'calls':>10} {'cached':>8} {'prompt tok':>13} {'compl. tok':>13}"
    lines = [f"cost estimate ({table.conversations} conversations to run; new calls only, tokens ~{CHARS_PER_TOKEN} "
             "chars each, replies at their caps):", head + (f" {'USD':>10}" if prices else "")]
    total_cost = 0.0
    for role in ROLES:
        role_rows = table.of_role(role)
        for cond, r in role_rows:
            lines.append(_line(role, cond, r, prices.get(role)))
        if role_rows:
            total = table.total(role)
            lines.append(_line(role, ALL, total, prices.get(role)))
            total_cost += prices[role].cost(total) if role in prices else 0.0
    before = sum(table.judge_before_dedupe.values())
    lines.append(f"judge calls before dedupe of shared replies and identical items: {before:,}; after: "
                 f"{table.calls('judge'):,} (exact when no two replies are identical; identical replies are "
                 "judged once)")
    for (role, probe), n in table.up_to.items():
        lines.append(f"{role} {probe}: up to {n:,} more calls, depending on the verdicts")
    lines.extend(line for note in table.notes for line in note.lines)
    if prices:
        lines.append(f"estimated cost: {total_cost:,.2f} USD (new calls only; roles without --price not counted)")
    return lines


def _line(role: str, cond: str, row: Row, price: Optional[Price]) -> str:
    text = (f"{role:<7} {cond:<14} {row.calls:>10,} {row.cached:>8,} {row.prompt_tokens:>13,} "
            f"{row.completion_tokens:>13,}")
    return text + (f" {price.cost(row):>10,.2f}" if price is not None else "")
