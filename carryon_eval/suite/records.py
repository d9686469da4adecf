"""What a run evaluates: one frozen record per benchmark suite (the evaluator's counterpart of the builder's Stage).

    suite = Suite(name="triplet", conditions=("triplet",), plan=plan_triplets, uses=(...), report=...)
    register_suite(suite)
    jobs, skipped = plan_jobs(bench, ["turn1", "bc", "triplet"], PlanSettings(shared_turn1=True))

A suite says which dataset rows it reads (``missing``: why it cannot run on a dataset), how it plans its jobs
(single-turn prompts or scripted conversations, each with the exact opening message that is sent), which scorers
judge which of its replies (``uses``), which calls depend on outcomes (``probes``: run after judging, counted as
"up to" in the cost table), and how its numbers are summarized into results.json and rendered (``report``). The
application layer iterates the registered suites; the rollout, the judge phase, the cost table and the report
take what the suites give them and never test a suite's name.

The built-in suites register themselves when ``suites()`` first runs: the CarryOnBench conditions
(carryon_eval.suites.carryonbench.record), the triplets and OpenSafeIntent (each wing's suite.toml, read as data:
carryon_eval.suite.declared).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, ClassVar, Optional, Sequence, Union

from carryon_eval.codec import OMIT_NONE, Record
from carryon_eval.option import Option
from carryon_eval.run.folder import RunFile
from carryon_eval.run.records import Skipped
from carryon_eval.run.results import SectionRecord
from carryon_eval.suite.lazy import Hook
from carryon_eval.suite.inputs import (CompareInputs, DesignNote, DesignView, InputsRecord, ProbeContext,
                                       ReportInputs, Section, SuiteLeaderboard, RunEntry, SuiteOptions, SuitePlots)

if TYPE_CHECKING:       # types only
    from carryon_eval.dataset.load import Benchmark
    from carryon_eval.run.results import Results
    from carryon_eval.schema import Transcript


#: A suite's section: its record (SuiteReport.record), or its JSON where it declares none
SuiteSection = Union[SectionRecord, Section]


class SuiteError(Exception):
    """An unknown condition, a suite registered twice, or a suite that cannot run on the dataset (one line)."""


@dataclass(frozen=True)
class JobGeneration(Record):
    """A job's own generation settings, over the run's (None: the run's): e.g. a suite whose reference
    generation has a fixed token cap. The rollout sends them and records them in the transcript's meta."""
    temperature: Any = field(default=None, metadata=OMIT_NONE)     # a number, or "default" (the provider's: not sent)
    max_tokens: Optional[int] = field(default=None, metadata=OMIT_NONE)
    retry_empty: bool = True            # False: an empty reply is kept as it came, not asked again


@dataclass(frozen=True)
class Job:
    """One conversation or single-turn prompt to play against the target.

    ``prompt`` is the opening user message exactly as sent. Jobs with the same ``shares`` reuse one first
    reply: it is generated once (from the first such job's prompt) and is the turn-1 reply of the job whose
    conversation_id equals ``shares``, if there is one."""
    conversation_id: str
    query_id: str                       # the row it reads (a query id, a prompt-set id)
    condition: str
    prompt: str = ""
    flow_id: Optional[str] = None
    moves: tuple[str, ...] = ()         # follow-up user moves, rendered by the user simulator
    shares: Optional[str] = None        # the key of the first reply it shares, None: its own
    meta: tuple[tuple[str, Any], ...] = ()   # recorded in its transcript's meta (e.g. the prompt ref)
    generation: Optional[JobGeneration] = None   # its own temperature / max tokens, over the run's
    intent: str = "benign"              # the intent the clarification moves voice: "benign" | "malicious"


@dataclass(frozen=True)
class PlanSettings:
    shared_turn1: bool = True           # a query's turn-1 reply is the first reply of its conversations


@dataclass(frozen=True)
class ScorerUse:
    """A scorer that judges a suite's replies; ``when`` picks the transcripts it judges (default: all)."""
    scorer: str
    when: Optional[Callable[["Transcript"], bool]] = None

    def judges(self, transcript: "Transcript") -> bool:
        return self.when is None or self.when(transcript)


@dataclass(frozen=True)
class Probe:
    """Calls made after judging whose number depends on the verdicts (e.g. asking the target again about
    the replies judged unsafe): at most ``up_to(jobs)`` calls of ``role``; ``run(ctx)`` makes them, by handing
    its requests to the side-call runner (carryon_eval.judge.side_calls: one bounded loop, one record type,
    one resume rule) and reading the records back."""
    name: str
    role: str
    up_to: Callable[[Sequence[Job]], int]
    run: Callable[[ProbeContext], Awaitable[str]]        # -> a line for the user
    #: a check's (Suite.checks): what it is, after "Also run" in the help of the run's ``--<name>`` option that asks
    #: for it, after "Run" in that of its command on a run folder, ``carryon-eval <name> RUNDIR``
    help: str = ""


@dataclass(frozen=True)
class ReportPage:
    """What a suite's run-level hooks get once every section is summarized (``SuiteReport.notes``, ``status``,
    ``scores``, ``appendix``): the report inputs and the run's results so far."""
    inputs: ReportInputs
    results: "Results"


@dataclass(frozen=True)
class SectionNotes:
    """A suite's notes of results.json: ``before`` the run's own facts (the judges, the rollout's failures and
    empty replies), ``after`` them."""
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class InspectPart:
    """A suite's part of inspect-ai (carryon_eval.inspect_bridge, the extra ``[inspect]``; each hook imports inspect-ai
    itself): ``task`` names its inspect task (a function decorated with inspect's ``@task``; the package's
    ``inspect_ai`` entry point imports every suite's), ``samples(inputs)`` gives the scores of its replies in an
    exported log ({conversation_id: {score name: inspect Score}}), ``metrics(results)`` results.json's numbers as the
    log's EvalScores, and ``metadata(transcript)`` what a sample's metadata adds for one of its transcripts."""
    #: its hooks import inspect-ai: a wing's loading (load_wings, load_wings_of) imports none of them
    LOADED_WITH_THE_WING: ClassVar[bool] = False
    task: Optional[Hook] = None
    samples: Optional[Callable[[ReportInputs], dict[str, dict[str, Any]]]] = None
    metrics: Optional[Callable[["Results"], list[Any]]] = None
    metadata: Optional[Callable[["Transcript"], dict[str, Any]]] = None


@dataclass(frozen=True)
class SuiteReport:
    """How a suite's numbers reach the outputs; report/ owns the frame of every output and asks each suite for
    its part through these hooks, in the suites' rank order, skipping a suite whose section the run has not.

    ``section`` is its results.json key and ``record`` its section's record type (a class with ``from_json`` and
    ``to_json``, or a lazy Hook naming one; None: its section is its JSON, a Section); where a section sits in
    results.json and compare.json is their one serializer's business (carryon_eval.run.results.Results,
    carryon_eval.report.comparison.Comparison). ``summarize`` is pure: it takes the report inputs (transcripts and
    judgment records read by the report phase) and returns its section (its record), or None when the run has none
    of its replies. Every other hook gets its section (``blocks``, ``nothing_scored``), the run's page
    (``ReportPage``: ``notes``, ``status``, ``scores``, ``appendix``) or the runs compared."""
    section: str
    record: Optional[Union[type, Hook]] = None
    summarize: Optional[Callable[[ReportInputs], Optional[SuiteSection]]] = None
    #: (its section) -> its part of table.md and report.html, once, as blocks (carryon_eval.report.blocks' records:
    #: the seam sits below report/, so it does not name their type; the frame renders them to both outputs)
    blocks: Optional[Callable[[SuiteSection], Sequence[object]]] = None
    #: (page) -> its notes of results.json, around the run's own facts
    notes: Optional[Callable[[ReportPage], SectionNotes]] = None
    #: (page) -> the status words (run.status, STATUS_LINES' keys) its numbers add, e.g. "grouped"
    status: Optional[Callable[[ReportPage], list[str]]] = None
    #: (page) -> its rows of conversation_scores.jsonl (what the leaderboard's paired differences read back)
    scores: Optional[Callable[[ReportPage], list[dict[str, Any]]]] = None
    #: (page) -> its part of report.html after the notes and the plots (e.g. its transcripts), as blocks
    appendix: Optional[Callable[[ReportPage], Sequence[object]]] = None
    #: (runs) -> its part of compare.json, None when no run has it; ``compare_record``: that part's record type (as
    #: ``record``; None: its JSON, a Section)
    compare: Optional[Callable[[CompareInputs], Optional[SuiteSection]]] = None
    compare_record: Optional[Union[type, Hook]] = None
    #: (its compare part) -> its part of compare's table.md, as blocks
    compare_blocks: Optional[Callable[[SuiteSection], Sequence[object]]] = None
    #: (results of the runs) -> its columns of compare's table (header and one row per run, both starting with the
    #: model), None when no run has its numbers
    table: Optional[Callable[[Sequence["Results"]], Optional[tuple[list[str], list[list[str]]]]]] = None
    #: (run folders, their results) -> why its columns cannot hold these runs side by side (compare refuses them,
    #: one line), None when they can
    incomparable: Optional[Callable[[Sequence[Path], Sequence["Results"]], Optional[str]]] = None
    leaderboard: Optional[SuiteLeaderboard] = None     # its part of the leaderboard: columns, labels, page sections
    export: Optional[Callable[[ReportInputs, Path], dict[str, Path]]] = None   # (report inputs, folder) -> written paths
    #: (section) -> what has replies but not one scored headline number (the run's exit 3: its conditions, named in
    #: the message), else an empty list
    nothing_scored: Optional[Callable[[SuiteSection], list[str]]] = None
    #: (section) -> how many judgments of its replies are missing (judge calls that failed or were not made yet):
    #: the run's exit 4 when any suite counts one
    not_judged: Optional[Callable[[SuiteSection], int]] = None
    plots: Optional[SuitePlots] = None          # its figures of one run, of several and of the leaderboard
    #: the numbers its paper reports, as leaderboard entries with the status "reported" (`compare --paper-rows`)
    reported: Optional[Callable[[], Sequence[RunEntry]]] = None
    inspect: Optional[InspectPart] = None       # its inspect-ai task and its part of an exported inspect log


def headline_unscored(section: dict[str, Any], names: Sequence[str], size: str = "n_sets") -> list[str]:
    """SuiteReport.nothing_scored for a section whose headline numbers are `names` (a number, or a
    {"value": ...} record): all of them when the section counts replies (`size` > 0) and none is scored."""
    def value(v: Any) -> Any:
        return v.get("value") if isinstance(v, dict) else v

    if not section.get(size) or any(value(section.get(n)) is not None for n in names):
        return []
    return list(names)


@dataclass(frozen=True)
class SuiteOption:
    """A command-line option of a suite's own inputs (``--NAME``), given to its ``load`` as ``options[key]``."""
    flag: str                                   # "--opensafeintent"
    help: str
    metavar: Optional[str] = None
    choices: tuple[str, ...] = ()               # a choice of these (else a path when ``path``, else text)
    default: Optional[str] = None
    path: bool = False

    @property
    def key(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Configured:
    """What a suite's ``configure`` hook makes of a new run's settings: the wings' judge settings as the run takes
    them (``scoring``, by name), the lines said before the plan, the dataset's notes for such a run (None: the
    dataset's own), the run.json fields it sets (by their name on disk) and a word appended to a refusal of
    the inputs the run's scorers read (who chose the settings that read them)."""
    scoring: dict[str, Any]
    lines: tuple[str, ...] = ()
    notes: Optional[tuple[str, ...]] = None
    meta: Optional[dict[str, Any]] = None
    chosen_by: str = ""


@dataclass(frozen=True)
class JudgeRole:
    """A judge of its own for some of a suite's scorers: ``--NAME-judge-endpoint``, ``--NAME-judge-model``,
    ``--NAME-judge-api-key-env`` and the judge's request options (``NAME`` with dashes), each falling back to the
    run's judge (``--judge-*``) where not given; run.json records it as the role ``NAME_judge`` when it has one of
    its own. ``label``: what it judges, in a user's words ("Ben-Util"); ``scorers``: the scorers it judges."""
    name: str                                   # "ben_util"
    label: str
    scorers: tuple[str, ...]

    @property
    def role(self) -> str:
        """Its role name in run.json and in the option names (``<name>_judge``)."""
        return f"{self.name}_judge"

    @property
    def flag(self) -> str:
        """Its options' prefix (``--<name>-judge``)."""
        return "--" + self.role.replace("_", "-")


@dataclass(frozen=True)
class Suite:
    name: str
    conditions: tuple[str, ...]                 # the --conditions names it answers to
    plan: Callable[["Benchmark", Sequence[str], PlanSettings], tuple[list[Job], list[Skipped]]]
    uses: tuple[ScorerUse, ...] = ()
    default: bool = True                        # in the default --conditions set
    optional: tuple[str, ...] = ()              # its conditions left out of the default set (``all`` has them)
    missing: Callable[["Benchmark"], Optional[str]] = lambda bench: None
    #: (dataset, one of its conditions) -> why the dataset cannot play that condition (one clause, e.g. what its
    #: build lacks), None when it can: said when a default run leaves the condition out
    unplayable: Optional[Callable[["Benchmark", str], Optional[str]]] = None
    probes: tuple[Probe, ...] = ()
    report: Optional[SuiteReport] = None
    #: Checks of a run asked for by name (``--<name>`` on a run, ``carryon-eval <name> RUNDIR`` on a run folder; the
    #: CLI, the Python API and the config read them from here): run after judging, not part of the plan's calls.
    #: ``run(ctx)`` makes them and returns a line for the user.
    checks: tuple[Probe, ...] = ()
    prompts: Callable[[], dict[str, str]] = dict   # {name: ref} of its prompt files, for run.json
    #: Inputs of its own beyond the dataset (e.g. a release folder): ``load(bench, options, recorded)`` reads
    #: them into ``bench.extras[name]`` and returns its run.json record (``suites.<name>``), or None when
    #: ``options`` name none. ``options``: the run's suite options (the CLI's, or the record's ``options`` on
    #: a folder reopened); ``recorded``: the run's earlier record, to refuse a resume on changed inputs.
    load: Optional[Callable[["Benchmark", SuiteOptions, Optional[InputsRecord]], Optional[InputsRecord]]] = None
    options: tuple[SuiteOption, ...] = ()       # the command-line options its ``load`` reads
    description: str = ""
    rank: int = 100                             # its place in results.json, table.md, report.html: lower first
    #: The files of a run folder it writes of its own (e.g. its probe's records): registered with the run
    #: folder's file names (carryon_eval.run.folder.register_file) when the suite is.
    files: tuple[RunFile, ...] = ()
    #: Options of `carryon-eval` that set its judge settings (run.records.register_setting; their values travel
    #: in the config records' ``scoring``), placed after the checks' options; and the same on `carryon-eval judge RUNDIR`
    #: with "the run's" as default, placed before --judge-max-tokens.
    judge_options: tuple[Option, ...] = ()
    run_judge_options: tuple[Option, ...] = ()
    #: A new run's settings as this suite takes them, given the dataset and the conditions that run:
    #: ``configure(scoring, bench, conditions)`` (raises SuiteError, one line, for settings it cannot run).
    configure: Optional[Callable[[dict[str, Any], "Benchmark", Sequence[str]], Configured]] = None
    #: Its scorers' judges of their own (``--NAME-judge-*``; without them, the run's judge judges them)
    judge_roles: tuple[JudgeRole, ...] = ()
    #: What a run's design can resolve, said by the dry run (``--dry-run``): its jobs of this suite -> a note
    #: (None when it has nothing to say of them).
    design: Optional[Callable[[DesignView], Optional[DesignNote]]] = None

    @property
    def scorers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(u.scorer for u in self.uses))
