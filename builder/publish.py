"""`carryon-build publish`: a verified dataset folder onto the Hugging Face Hub as ONE gated commit with a tag,
then proof that the remote revision is exactly the MANIFEST.

Order, each check refusing before anything is written when it fails: verify the folder (and that the tag names
its release) -> if the tag exists, it must already hold exactly this folder (a published tag is never moved; a
re-run then only re-checks) -> create the dataset repository if needed -> set gating (and visibility) -> one
commit: every MANIFEST file plus MANIFEST.json added, every other remote file deleted (except the Hub's own
.gitattributes), on top of the head we listed (parent_commit, so a concurrent push fails instead of mixing) ->
the tag on that commit -> the remote check: the tag's target is the commit, every file's LFS sha256 (or, for a
regular file, its git blob id) and size equal the local verified bytes, no extra file, gating as asked.

The token comes from HF_TOKEN or the huggingface-hub login (`get_token`) and goes only into the client's
Authorization header: it is never printed, logged or written, and is scrubbed from error messages.
"""
from __future__ import annotations

import hashlib
import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from .citation import release_bibtex, release_url
from .files import file_entry
from .verify import verify_folder

if TYPE_CHECKING:
    from huggingface_hub import HfApi

REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
TAG = re.compile(r"^(?:[a-z][a-z0-9]*-)?v\d+\.\d+\.\d+$")      # v0.1.0, or a release line's: open-v1.0.0
GATING = ("manual", "auto")
GATING_WORDS = {"manual": "manual approval", "auto": "automatic approval", False: "no gating: the card declares none"}
HUB_MANAGED = frozenset({".gitattributes"})     # the Hub writes it (LFS rules); never ours to delete
REPO_TYPE = "dataset"


class PublishError(Exception):
    """A refusal: bad arguments, a folder that does not verify, a tag that would move, a Hub error."""


@dataclass(frozen=True)
class UploadFile:
    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class PublishPlan:
    folder: Path
    repo_id: str
    tag: str
    private: bool
    gated: Any                              # "manual", "auto" or False (an ungated card)
    files: tuple[UploadFile, ...]           # every MANIFEST file, then MANIFEST.json

    def describe(self) -> str:
        total = sum(f.size for f in self.files)
        lines = [f"publish {self.folder} -> dataset {self.repo_id}, tag {self.tag} (dry run: nothing is called)",
                 (f"  repository: create if missing ({'private' if self.private else 'public'}), "
                  f"gated={self.gated} ({GATING_WORDS[self.gated]})"),
                 (f"  commit: one commit on main adding {len(self.files)} files ({total:,} bytes) and deleting every "
                  f"other remote file ({', '.join(sorted(HUB_MANAGED))} excepted)")]
        lines += [f"    add {f.path}  {f.size:,} bytes  sha256 {f.sha256[:16]}..." for f in self.files]
        lines += [f"  tag: {self.tag} on that commit (refused if {self.tag} already exists on other content)",
                  (f"  then: check the remote revision {self.tag} file by file against the MANIFEST, "
                   "print its URL and BibTeX")]
        return "\n".join(lines)


@dataclass(frozen=True)
class Published:
    commit: str
    url: str
    bibtex: str
    problems: tuple[str, ...]
    committed: bool                         # False: the tag already held exactly this folder


def card_gating(folder: Path) -> Any:
    """The gating a folder's card asks for: "manual" when it has gating fields (CASE-Bench's terms), else False."""
    from .declared import CardError, front_matter
    try:
        header = front_matter((Path(folder) / "README.md").read_text(encoding="utf-8"))
    except (OSError, CardError):
        return "manual"                       # verify names what is wrong with the card
    return "manual" if any(k.startswith("extra_gated") for k in header) else False


def plan_publish(folder: Path, repo_id: str, tag: str, *, private: bool = False,
                 gated: Any = None) -> PublishPlan:
    """Check the arguments and the folder (verify) and list what would be uploaded; calls nothing remote.
    ``gated``: None takes the card's (manual for a gated card, False for an ungated one)."""
    folder = Path(folder)
    if gated is None:
        gated = card_gating(folder)
    elif card_gating(folder) is False:
        raise PublishError(f"--gated {gated}: {folder}'s card declares no gating (its source is openly "
                           "licensed); publish it without --gated")
    if not REPO_ID.match(repo_id):
        raise PublishError(f"--repo-id {repo_id!r}: expected ORG/NAME (a namespace and a dataset name)")
    if not TAG.match(tag):
        raise PublishError(f"--tag {tag!r}: expected vMAJOR.MINOR.PATCH, e.g. v0.1.0 (or a release line's, "
                           "e.g. open-v1.0.0)")
    if gated is not False and gated not in GATING:
        raise PublishError(f"--gated {gated!r}: expected one of {', '.join(GATING)}")
    problems, manifest = verify_folder(folder)
    if problems:
        raise PublishError(f"{folder} does not verify ({problems[0]}; {len(problems)} mismatch(es) in all): "
                           f"run carryon-build verify {folder}")
    if manifest.get("hub_repo") and manifest["hub_repo"] != repo_id:
        raise PublishError(f"--repo-id {repo_id}, but {folder} was built for {manifest['hub_repo']} (--hub-repo: its "
                           f"croissant.json and citations name it); publish to {manifest['hub_repo']}, or rebuild with "
                           f"--hub-repo {repo_id}")
    if manifest.get("release") != tag:
        raise PublishError(f"--tag {tag} but {folder} is release {manifest.get('release')}: rebuild with "
                           f"--release {tag}, or publish under --tag {manifest.get('release')}")
    files = [UploadFile(rel, entry["size"], entry["sha256"]) for rel, entry in sorted(manifest["files"].items())]
    own = file_entry(folder / "MANIFEST.json")
    files.append(UploadFile("MANIFEST.json", own["size"], own["sha256"]))
    return PublishPlan(folder, repo_id, tag, private, gated, tuple(files))


def git_blob_id(data: bytes) -> str:
    """The git object id the Hub reports for a regular (non-LFS) file."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def check_remote(api: "HfApi", plan: PublishPlan, revision: str) -> list[str]:
    """Every difference between the remote revision and the plan's files, one line each (empty: identical)."""
    from huggingface_hub.hf_api import RepoFile

    remote = {f.path: f for f in api.list_repo_tree(plan.repo_id, revision=revision, recursive=True,
                                                    repo_type=REPO_TYPE) if isinstance(f, RepoFile)}
    problems = []
    for want in plan.files:
        got = remote.get(want.path)
        if got is None:
            problems.append(f"{want.path}: missing from {plan.repo_id}@{revision}")
        elif got.lfs is not None:
            if (got.lfs.sha256, got.lfs.size) != (want.sha256, want.size):
                problems.append(f"{want.path}: remote LFS sha256/size {got.lfs.sha256[:16]}.../{got.lfs.size} bytes, "
                                f"MANIFEST {want.sha256[:16]}.../{want.size} bytes")
        else:
            data = (plan.folder / want.path).read_bytes()
            if hashlib.sha256(data).hexdigest() != want.sha256:
                problems.append(f"{want.path}: the local file changed since it was verified")
                continue
            local = git_blob_id(data)
            if (got.blob_id, got.size) != (local, want.size):
                problems.append(f"{want.path}: remote content (git blob {got.blob_id[:12]}, {got.size} bytes) is not "
                                f"the MANIFEST's (git blob {local[:12]}, {want.size} bytes)")
    wanted = {f.path for f in plan.files} | HUB_MANAGED
    problems += [f"{path}: on {plan.repo_id}@{revision} but not in the MANIFEST"
                 for path in sorted(set(remote) - wanted)]
    return problems


def _tag_target(api: "HfApi", plan: PublishPlan) -> Optional[str]:
    """The commit the tag points at; None when the tag or the whole repository does not exist yet."""
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        refs = api.list_repo_refs(plan.repo_id, repo_type=REPO_TYPE)
    except RepositoryNotFoundError:
        return None
    return next((t.target_commit for t in refs.tags if t.name == plan.tag), None)


def _head(api: "HfApi", plan: PublishPlan) -> Optional[str]:
    refs = api.list_repo_refs(plan.repo_id, repo_type=REPO_TYPE)
    return next((b.target_commit for b in refs.branches if b.name == "main"), None)


def _commit(api: "HfApi", plan: PublishPlan, log: Callable[[str], None]) -> str:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete
    from huggingface_hub.hf_api import RepoFile

    head = _head(api, plan)
    keep = {f.path for f in plan.files} | HUB_MANAGED
    stale = [] if head is None else sorted(
        f.path for f in api.list_repo_tree(plan.repo_id, revision=head, recursive=True, repo_type=REPO_TYPE)
        if isinstance(f, RepoFile) and f.path not in keep)
    operations = [CommitOperationAdd(f.path, str(plan.folder / f.path)) for f in plan.files]
    operations += [CommitOperationDelete(path) for path in stale]
    log(f"publish: one commit adding {len(plan.files)} files, deleting {len(stale)} stale remote file(s)")
    info = api.create_commit(plan.repo_id, operations, repo_type=REPO_TYPE, parent_commit=head,
                             commit_message=f"CarryOnBench {plan.tag}",
                             commit_description=f"Dataset release {plan.tag}: every file of its MANIFEST.json "
                                                "(carryon-build publish).")
    return info.oid


def publish(api: "HfApi", plan: PublishPlan, log: Callable[[str], None] = print) -> Published:
    """Create/gate the repository, commit and tag (unless the tag already holds this folder), check the remote."""
    target = _tag_target(api, plan)
    if target is not None:
        differs = check_remote(api, plan, target)
        if differs:
            raise PublishError(f"tag {plan.tag} already exists on {plan.repo_id} at commit {target[:12]}, which does "
                               f"not hold this folder ({differs[0]}); a published tag is never moved: publish a new "
                               "release under a new tag")
    api.create_repo(plan.repo_id, repo_type=REPO_TYPE, private=plan.private or None, exist_ok=True)
    api.update_repo_settings(plan.repo_id, repo_type=REPO_TYPE, gated=plan.gated,
                             private=True if plan.private else None)
    log(f"publish: {plan.repo_id} exists, gated={plan.gated}{', private' if plan.private else ''}")
    committed = target is None
    if target is not None:
        log(f"publish: tag {plan.tag} already holds exactly this folder (commit {target[:12]}); nothing to upload")
        commit = target
    else:
        commit = _commit(api, plan, log)
        api.create_tag(plan.repo_id, tag=plan.tag, revision=commit, repo_type=REPO_TYPE,
                       tag_message=f"CarryOnBench dataset release {plan.tag}")
        log(f"publish: tagged commit {commit[:12]} as {plan.tag}")
    problems = []
    tagged = _tag_target(api, plan)
    if tagged != commit:
        problems.append(f"tag {plan.tag}: points at {tagged}, not at the published commit {commit}")
    problems += check_remote(api, plan, plan.tag)
    gated = api.dataset_info(plan.repo_id).gated
    if gated != plan.gated:
        problems.append(f"gating: the Hub reports gated={gated!r}, asked for {plan.gated!r}")
    return Published(commit=commit, url=release_url(plan.repo_id, plan.tag, api.endpoint),
                     bibtex=release_bibtex(plan.tag, repo_id=plan.repo_id, commit=commit, endpoint=api.endpoint),
                     problems=tuple(problems), committed=committed)


def hub_client(endpoint: Optional[str] = None) -> "HfApi":
    """The real huggingface-hub client with the token of HF_TOKEN or the login; refuses without one."""
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.utils import disable_progress_bars

    token = get_token()
    if not token:
        raise PublishError("no Hugging Face token: set HF_TOKEN (a write token) or log in with `hf auth login`")
    disable_progress_bars()
    return HfApi(endpoint=endpoint, token=token)


def hub_errors() -> tuple[type[BaseException], ...]:
    """What a publish can fail with short of a bug: refusals, the Hub's HTTP errors, and the transport's
    (connection refused, timeouts; httpx2 or httpx, whichever this huggingface-hub uses)."""
    errors: list[type[BaseException]] = [PublishError, OSError, ValueError, RuntimeError]
    for name in ("httpx2", "httpx"):
        try:
            errors.append(importlib.import_module(name).HTTPError)
        except (ImportError, AttributeError):
            pass
    return tuple(errors)


def scrub(text: str, api: Optional["HfApi"]) -> str:
    """An error message without the token, whatever the server or the client put in it."""
    token = getattr(api, "token", None)
    return text.replace(token, "<token>") if isinstance(token, str) and token else text
