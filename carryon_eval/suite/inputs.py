"""What a suite's hooks receive and return, typed: the seam's own records, so that no hook takes ``Any``.

- ``ReportInputs``: what ``SuiteReport.summarize`` and ``export`` read (the run's transcripts, one judge's records);
- ``ProbeContext``: what a ``Probe`` gets (the run folder, the endpoint of its role, the judge, the concurrency);
- ``SuiteOptions`` / ``InputsRecord``: what ``Suite.load`` reads (the run's suite options) and returns (its run.json
  record, ``suites.<name>``);
- ``Section``: a suite's JSON-ready results.json section (and its compare part);
- ``Stat``, ``Column``, ``Cell``, ``RunEntry``: the leaderboard's columns a suite adds, and ``SuiteLeaderboard``: its
  whole part of the board (``SuiteReport.leaderboard``: columns, labels, first sort, correlations, page sections,
  and ``RunBasis``: what a run's numbers stand on, read of its section);
- ``CompareInputs``: what a suite's part of `compare` reads (``SuiteReport.compare``);
- ``SuitePlots``, ``BoardView``: a suite's figures of one run, of several and of the leaderboard
  (``SuiteReport.plots``).

The stage folders build these records and the wings read them; this module imports neither (run/, judge/'s store
and dataset/ sit below it).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Protocol, Sequence, Union

from carryon_eval.codec import OMIT_EMPTY, Record
from carryon_eval.metrics.number import HasNumber, Interval
from carryon_eval.run.records import RunMeta
from carryon_eval.run.results import Results

if TYPE_CHECKING:       # types only
    import numpy as np

    from carryon_eval.metrics.family import Family

    from carryon_eval.dataset.load import Benchmark
    from carryon_eval.model.endpoint import ChatEndpoint
    from carryon_eval.run.folder import RunFolder
    from carryon_eval.schema import Transcript

Section = dict[str, Any]            # a JSON-ready results.json section
SuiteOptions = dict[str, Any]       # the run's suite options: the CLI's, or a reopened folder's recorded ones
RUN_FOLDER = "run_folder"            # SuiteOptions' key of the run folder the record is written in (registry.load_inputs)
InputsRecord = dict[str, Any]       # what ``Suite.load`` returns: run.json's ``suites.<name>`` (JSON-ready)


@dataclass
class ReportInputs:
    """What a suite's summarize function reads: the run folder, its transcripts and one judge's records."""
    run: "RunFolder"
    bench: "Benchmark"
    transcripts: list["Transcript"]
    judge: Optional[str]
    n_resamples: int
    seed: int
    #: what a suite's hooks read once and share within one report (e.g. its typed judgment records), by a key
    #: of its own
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    #: a scorer's own judge where no one judge is selected (a run whose scorers have judges of their own): given
    #: by the report's frame (judge.store.select_judge), so that the seam reads no judge files itself
    scorer_judge: Optional[Callable[[str], Optional[str]]] = field(default=None, compare=False, repr=False)

    def judge_of(self, scorer: str) -> Optional[str]:
        """The judge whose records of ``scorer`` are read: the one selected, else (a run whose scorers have judges
        of their own) the scorer's judge."""
        if self.judge is not None or self.scorer_judge is None:
            return self.judge
        return self.scorer_judge(scorer)

    def records(self, scorer: str) -> list[Any]:
        """One scorer's records of its selected judge, of the record type the scorer declares (carryon_eval.judge.
        scorers.judgment_record), through the run's one judgments view: read their fields."""
        return self.run.judgments().of(scorer, self.judge_of(scorer))


@dataclass(frozen=True)
class DesignView:
    """What a dry run knows of a run's design (``Suite.design``): its planned jobs (conversation_id, query_id,
    condition, moves), the results of finished runs whose spreads to read instead of the suite's own
    (``--power-from``), and the difference whose queries to give (``--detect``)."""
    jobs: Sequence[Any]
    power_from: Sequence[Results] = ()
    detect: Optional[float] = None


@dataclass(frozen=True)
class DesignNote:
    """What a suite says of a run's design before it is paid for: keys of `--dry-run --json`'s object and lines of
    the printed table (CarryOnBench: the smallest differences the design detects)."""
    json: Mapping[str, Any] = field(default_factory=dict)
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompareInputs:
    """What `compare` gives each suite: the runs' labels (unique model names), their results and their
    conversation_scores.jsonl rows, in the order of the command line."""
    labels: Sequence[str]
    results: Sequence[Results]
    scores: Sequence[Sequence[dict[str, Any]]]


class ColumnComparison(Protocol):
    """One column compared across the models of one comparability group (carryon_eval.report.board_stats'
    ColumnFamily is one): the runs compared (run indices), the shared queries, each run's number and bootstrap
    replicates (M,), (M, R) in that order, the adjusted pairwise verdicts, and each run's rank interval."""
    @property
    def runs(self) -> Sequence[int]: ...
    @property
    def n_queries(self) -> int: ...
    @property
    def points(self) -> "np.ndarray": ...
    @property
    def reps(self) -> "np.ndarray": ...
    @property
    def family(self) -> "Family": ...
    @property
    def ranks(self) -> Mapping[int, tuple[int, int]]: ...


class BoardView(Protocol):
    """What a suite's leaderboard figures and page sections read of the board: its runs, their comparability
    group letters, the groups, the columns, the cells ([run][column]) and each compared column's family per group
    (carryon_eval.report.leaderboard's Board is one)."""
    @property
    def runs(self) -> Sequence["RunEntry"]: ...
    @property
    def columns(self) -> Sequence["Column"]: ...
    @property
    def cells(self) -> Sequence[Sequence["Cell"]]: ...
    @property
    def groups(self) -> Sequence[str]: ...
    @property
    def group_info(self) -> Mapping[str, Any]: ...

    def family(self, key: str, group: str) -> Optional[ColumnComparison]: ...


@dataclass(frozen=True)
class SuitePlots:
    """A suite's figures, each ``{name: draw}``: a draw returns PNG bytes, or raises carryon_eval.report.plots'
    PlotSkipped with why it is not drawn. ``run``: of one run's results (plots/ and report.html); ``compare``: of
    several runs' (`compare --out`'s plots/); ``board``: of the leaderboard (its page and `compare --out`'s
    plots/), each drawn only where ``board_when`` (if it names it) says the runs have its data; ``captions``:
    {name: caption} of them all."""
    run: Mapping[str, Callable[[Results], bytes]] = field(default_factory=dict)
    compare: Mapping[str, Callable[[Sequence[Results]], bytes]] = field(default_factory=dict)
    board: Mapping[str, Callable[[BoardView], bytes]] = field(default_factory=dict)
    board_when: Mapping[str, Callable[[BoardView], bool]] = field(default_factory=dict)
    captions: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProbeContext:
    """What a suite's probe gets: the run folder, the endpoint of its role, the judge whose verdicts chose
    the replies, the concurrency and the dataset (with the suites' own inputs in ``bench.extras``)."""
    run: "RunFolder"
    target: "ChatEndpoint"
    judge_model: Optional[str]
    concurrency: int
    bench: Optional["Benchmark"] = None


# ---------------------------------------------------------------- leaderboard columns
@dataclass(frozen=True)
class Stat:
    """A model's number as a function of condition means of per-conversation values: `needs` names the
    (condition, value) means, `combine` maps them (floats, or numpy arrays of bootstrap replicates) to it."""
    needs: tuple[tuple[str, str], ...]
    combine: Callable[..., Any] = lambda x: x
    undefined: str = "undefined (a division by zero)"      # the reason given when `combine` is not finite


@dataclass(frozen=True)
class Column:
    key: str                          # stable id: "bc.utility", "recovery", "triplet.icu", ...
    label: str
    group: str                        # the header band it sits under
    digits: int = 1
    better: Optional[str] = None      # "higher" | "lower" | None: which end a first click puts on top
    stat: Optional[Stat] = None       # how to recompute it per query (paired differences); None: not available
    note: str = ""


@dataclass(frozen=True)
class Cell(Record, HasNumber):
    """A leaderboard cell: a run's number in a column (``number``: its Number; ``under_95``: marked)."""
    value: Optional[float]
    ci95: Interval = None
    scored_share: Optional[float] = None
    reason: Optional[str] = field(default=None, metadata=OMIT_EMPTY)

    @property
    def under_95(self) -> bool:
        return self.number.under_95


@dataclass
class RunEntry:
    label: str                                   # the model's name on the board (unique)
    folder: str
    results: Results
    scores: list[dict[str, Any]]                 # conversation_scores.jsonl
    meta: RunMeta = field(default_factory=RunMeta)

    def simulator(self) -> "Simulator":
        """Who played the user (run.json's user role)."""
        user = self.meta.role("user")
        return Simulator(user.model or None, user.local)

    def dataset_used(self) -> "DatasetUsed":
        ref, res = self.meta.dataset, self.results.dataset
        return DatasetUsed(res.source or ref.source, res.revision or ref.revision, res.manifest_version,
                           ref.manifest_sha256, ref.content_sha256)

    def dataset(self) -> dict[str, Any]:
        return self.dataset_used().to_json()

    def dataset_id(self) -> str:
        """What pins the rows: their content hashes when recorded, else the manifest's, else source and revision."""
        d = self.dataset_used()
        pin = d.content_sha256 or d.manifest_sha256 or [d.source, d.revision]
        return hashlib.sha256(json.dumps(pin, sort_keys=True).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Simulator(Record):
    """Who played a board's run's user: its model, and whether it ran on the embedded model."""
    model: Optional[str] = None
    local: bool = False


@dataclass(frozen=True)
class RunBasis:
    """What a run's numbers stand on, as the board reads it of a suite's section (``SuiteLeaderboard.basis``): its
    queries, the plan's length mix per condition (model turns -> share; a condition without one: the conversations
    present) and its bootstrap's resamples and seed (None: not recorded)."""
    n_queries: Optional[int] = None
    plans: Mapping[str, Mapping[int, float]] = field(default_factory=dict)
    n_resamples: Optional[int] = None
    seed: Optional[int] = None

    def filled_by(self, other: "RunBasis") -> "RunBasis":
        """This basis with what it lacks taken from another suite's."""
        def first(a: Optional[int], b: Optional[int]) -> Optional[int]:
            return a if a is not None else b
        return RunBasis(first(self.n_queries, other.n_queries), {**other.plans, **self.plans},
                        first(self.n_resamples, other.n_resamples), first(self.seed, other.seed))


@dataclass(frozen=True)
class DatasetUsed(Record):
    """The dataset a board's run used, as the leaderboard names it (results.json's source and revision, else
    run.json's)."""
    source: Optional[str] = None
    revision: Optional[str] = None
    manifest_version: Optional[str] = None
    manifest_sha256: Optional[str] = None
    content_sha256: Optional[dict[str, str]] = None


ColumnSource = Callable[[Sequence[RunEntry]], list[tuple[Column, list[Cell]]]]
#: (x, y) per key of one run (None: the run lacks it): the pairs whose rank correlation across a group's models
#: the leaderboard page shows (CarryOnBench: model utility vs model harm, per condition)
Correlated = Mapping[str, tuple[Optional[float], Optional[float]]]
PageRows = list[dict[str, Any]]       # rows of a page section, as the leaderboard template reads them


class FailureRow(Protocol):
    """A model's row of its group's failure-mode table (``SuiteLeaderboard.failure_modes``): the model and the flags
    it earned (compare.json's ``failure_modes``); the rest of the row is the suite's own, as its template reads it."""
    @property
    def model(self) -> str: ...
    @property
    def flags(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class SuiteLeaderboard:
    """A suite's part of the leaderboard (``SuiteReport.leaderboard``). ``columns``: its table columns (runs ->
    [(column, one cell per run)], [] when no run has its numbers); ``labels``: the display names of the keys its
    Stats' needs and ``correlated`` name ({"bc": "BC"}); ``sort``: the column key the page sorts on first (the
    first suite, by rank, that names one); ``correlated``: per run the (x, y) pairs whose Spearman correlation
    within each group the page shows; ``domain_views``: the page's "By domain" tables; ``failure_modes``:
    (board, group letter) -> the rows of the page's failure-mode table of that group; ``units``: how its rows of
    conversation_scores.jsonl are read back for the paired differences of its columns that have a Stat."""
    columns: ColumnSource
    labels: Mapping[str, str] = field(default_factory=dict)
    sort: Optional[Union[str, tuple[str, ...]]] = None   # several: the first the board has
    correlated: Optional[Callable[[Results], Correlated]] = None
    domain_views: Optional[Callable[[BoardView], PageRows]] = None
    failure_modes: Optional[Callable[[BoardView, str], Sequence[FailureRow]]] = None
    #: (board, group letter) -> lines under its failure-mode table (e.g. which flag no model earned, and why)
    failure_notes: Optional[Callable[[BoardView, str], list[str]]] = None
    #: what its numbers' estimators are, in a sentence the page shows beside the paired differences
    estimators: str = ""
    units: Optional["UnitRule"] = None
    #: who judged its numbers in a run ({kind: {models, prompt refs, ...}}): part of the comparability key, the
    #: group's record and each leaderboard.jsonl row's ``judges``
    judged: Optional[Callable[[Results], Mapping[str, Any]]] = None
    judge_labels: Mapping[str, str] = field(default_factory=dict)   # its judge kinds' names on the page
    #: a warning of the page when the runs differ in a way of its own that makes its numbers incomparable
    mismatch: Optional[Callable[[Sequence["RunEntry"]], Optional[str]]] = None
    #: what a run's numbers stand on, read of its section: its queries, plan mix and bootstrap settings
    basis: Optional[Callable[[Results], RunBasis]] = None


class UnitRecord(Protocol):
    """One conversation's record as the leaderboard's estimator reads it back: it belongs to a query."""
    query_id: str


@dataclass(frozen=True)
class UnitRule:
    """How a suite's conversation_scores.jsonl rows are read back (``record``: None for a row written before the
    rows carried what the estimator needs) and its headline's estimator rerun on resampled queries
    (``replicates(records, value name, {query id: index}, resample counts, the plan's length mix)``): what the
    leaderboard's paired differences recompute. ``prepare(records, value name, {query id: index}, n queries)``,
    when given, reads one run's records of a condition once into what ``.replicates(counts, plan)`` recomputes on
    any draws over those queries (a query left out drawn 0 times): compare then reads each run once, whatever the
    number of pairs and columns."""
    record: Callable[[Mapping[str, Any]], Optional[UnitRecord]]
    replicates: Callable[[Sequence[UnitRecord], str, Mapping[str, int], "np.ndarray",
                          Optional[Mapping[int, float]]], "np.ndarray"]
    prepare: Optional[Callable[[Sequence[UnitRecord], str, Mapping[str, int], int], "PreparedUnits"]] = None


class PreparedUnits(Protocol):
    """One run's records of a condition, read once for one value (UnitRule.prepare)."""

    def replicates(self, counts: "np.ndarray", plan: Optional[Mapping[int, float]]) -> Any: ...
