"""A local Hugging Face Hub for tests: the HTTP API that `carryon-build publish` calls, nothing more.

huggingface_hub's real `HfApi` talks to it (``HfApi(endpoint=hub.endpoint)`` or ``HF_ENDPOINT``). The PyPI
package hf-local-hub was tried first: it is a launcher for a Go server binary that the package does not ship,
so it cannot serve here. This one keeps dataset repositories in memory, with real commits (each holds the full
file tree), branches, tags, gating and visibility, and the git-LFS "basic" upload protocol; huggingface_hub must
not use Xet against it (set ``HF_HUB_DISABLE_XET=1``).

Routes (``{repo}`` is ``ORG/NAME``; every /api route needs ``Authorization: Bearer <token>``, else 401):
- ``POST /api/repos/create``, ``GET /api/datasets/{repo}[/revision/{rev}]``, ``PUT /api/datasets/{repo}/settings``
- ``POST /api/validate-yaml``
- ``POST /api/datasets/{repo}/preupload/{rev}`` (Parquet files go to LFS, the rest are regular git blobs)
- ``POST /datasets/{repo}.git/info/lfs/objects/batch`` and ``PUT /lfs/{oid}`` (the presigned-style upload)
- ``POST /api/datasets/{repo}/commit/{rev}`` (ndjson: header, file, lfsFile, deletedFile)
- ``POST /api/datasets/{repo}/tag/{rev}``, ``GET /api/datasets/{repo}/refs``
- ``GET /api/datasets/{repo}/tree/{rev}[/{path}]`` (``recursive``): each file's git oid, size and LFS sha256

Test hooks: ``hub.repo(repo_id)`` (its commits, tags, gated, private), ``hub.alter(repo_id, path, data)``
(changes a file in place on the server, in every commit, as a corrupted store would), ``hub.tamper`` (path ->
bytes stored instead of what a later commit sends), ``hub.calls`` (method
and path of every request) and ``hub.seen_tokens`` (the bearer tokens received).
"""
from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Optional

from support.scripted_server import ScriptedServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

_REPO = "/api/datasets/{org}/{name}"


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class StoredFile:
    data: bytes
    lfs: bool

    def entry(self, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "file", "path": path, "size": len(self.data)}
        if self.lfs:
            sha = hashlib.sha256(self.data).hexdigest()
            pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {len(self.data)}\n"
            out.update(oid=git_blob_sha1(pointer.encode()),
                       lfs={"oid": sha, "size": len(self.data), "pointerSize": len(pointer)})
        else:
            out["oid"] = git_blob_sha1(self.data)
        return out


@dataclass
class Commit:
    oid: str
    parent: Optional[str]
    summary: str
    files: dict[str, StoredFile]


@dataclass
class HubRepo:
    repo_id: str
    private: bool
    gated: Any = False
    commits: list[Commit] = field(default_factory=list)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def commit(self, revision: str) -> Optional[Commit]:
        oid = self.branches.get(revision) or self.tags.get(revision) or revision
        return next((c for c in self.commits if c.oid == oid), None)

    def add_commit(self, summary: str, files: dict[str, StoredFile], branch: str = "main") -> Commit:
        parent = self.branches.get(branch)
        oid = hashlib.sha1(json.dumps([parent, summary, sorted(
            (p, hashlib.sha256(f.data).hexdigest()) for p, f in files.items())]).encode()).hexdigest()
        commit = Commit(oid, parent, summary, files)
        self.commits.append(commit)
        self.branches[branch] = oid
        return commit


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers={"X-Error-Message": message})


class HubServer(ScriptedServer):
    """The local Hub, in a background thread (the lifecycle of tests/support/scripted_server.py)."""

    def __init__(self, token: str) -> None:
        super().__init__(handler=lambda body: "", models=())
        self.token = token
        self.repos: dict[str, HubRepo] = {}
        self.lfs_store: dict[str, bytes] = {}
        self.calls: list[tuple[str, str]] = []
        self.seen_tokens: set[str] = set()
        self.tamper: dict[str, bytes] = {}      # path -> bytes the store puts there instead, in every new commit
        self._hub_lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        if self.port is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self.port}"

    # ---------------------------------------------------------------- test hooks
    def repo(self, repo_id: str) -> HubRepo:
        return self.repos[repo_id]

    def alter(self, repo_id: str, path: str, data: bytes) -> None:
        for commit in self.repos[repo_id].commits:
            if path in commit.files:
                commit.files[path] = StoredFile(data, commit.files[path].lfs)

    # ---------------------------------------------------------------- app
    def _app(self) -> Any:
        r = _REPO
        return Starlette(routes=[
            Route("/api/repos/create", self._create, methods=["POST"]),
            Route("/api/validate-yaml", self._validate_yaml, methods=["POST"]),
            Route(r, self._info, methods=["GET"]),
            Route(r + "/revision/{rev:path}", self._info, methods=["GET"]),
            Route(r + "/settings", self._settings, methods=["PUT"]),
            Route(r + "/preupload/{rev:path}", self._preupload, methods=["POST"]),
            Route("/datasets/{org}/{name}.git/info/lfs/objects/batch", self._lfs_batch, methods=["POST"]),
            Route("/lfs/{oid}", self._lfs_put, methods=["PUT"]),
            Route(r + "/commit/{rev:path}", self._commit, methods=["POST"]),
            Route(r + "/tag/{rev:path}", self._tag, methods=["POST"]),
            Route(r + "/refs", self._refs, methods=["GET"]),
            Route(r + "/tree/{rev}", self._tree, methods=["GET"]),
            Route(r + "/tree/{rev}/{path:path}", self._tree, methods=["GET"]),
        ])

    def _authorized(self, request: Request) -> bool:
        self.calls.append((request.method, request.url.path))
        auth = request.headers.get("authorization", "")
        if auth.startswith("Bearer "):
            self.seen_tokens.add(auth[len("Bearer "):])
        return auth == f"Bearer {self.token}"

    def _repo_of(self, request: Request) -> Optional[HubRepo]:
        return self.repos.get(f"{request.path_params['org']}/{request.path_params['name']}")

    async def _guard(self, request: Request) -> tuple[Optional[HubRepo], Optional[Response]]:
        if not self._authorized(request):
            return None, _error(401, "Invalid credentials in Authorization header")
        repo = self._repo_of(request)
        if repo is None:
            return None, JSONResponse({"error": "Repository not found"}, status_code=404,
                                      headers={"X-Error-Code": "RepoNotFound"})
        return repo, None

    async def _create(self, request: Request) -> Response:
        if not self._authorized(request):
            return _error(401, "Invalid credentials in Authorization header")
        body = await request.json()
        repo_id = f"{body['organization']}/{body['name']}"
        url = f"{self.endpoint}/datasets/{repo_id}"
        with self._hub_lock:
            if repo_id in self.repos:
                return JSONResponse({"error": "You already created this dataset repo", "url": url}, status_code=409)
            repo = HubRepo(repo_id, private=body.get("visibility") == "private" or bool(body.get("private")))
            repo.add_commit("initial commit", {".gitattributes": StoredFile(b"*.parquet filter=lfs diff=lfs "
                                                                            b"merge=lfs -text\n", False)})
            self.repos[repo_id] = repo
        return JSONResponse({"url": url, "name": repo_id})

    async def _validate_yaml(self, request: Request) -> Response:
        if not self._authorized(request):
            return _error(401, "Invalid credentials in Authorization header")
        return JSONResponse({})

    async def _info(self, request: Request) -> Response:
        repo, err = await self._guard(request)
        if err:
            return err
        commit = repo.commit(request.path_params.get("rev", "main"))
        if commit is None:
            return _error(404, "Revision not found")
        return JSONResponse({"id": repo.repo_id, "sha": commit.oid, "private": repo.private, "gated": repo.gated,
                             "siblings": [{"rfilename": p} for p in sorted(commit.files)], "tags": []})

    async def _settings(self, request: Request) -> Response:
        repo, err = await self._guard(request)
        if err:
            return err
        body = await request.json()
        if "gated" in body:
            repo.gated = body["gated"]
        if "visibility" in body:
            repo.private = body["visibility"] == "private"
        return JSONResponse({})

    async def _preupload(self, request: Request) -> Response:
        repo, err = await self._guard(request)
        if err:
            return err
        head = repo.commit(request.path_params["rev"])
        files = []
        for f in (await request.json())["files"]:
            lfs = f["path"].endswith(".parquet")
            old = head.files.get(f["path"]) if head else None
            oid = None
            if old is not None:
                oid = hashlib.sha256(old.data).hexdigest() if old.lfs else git_blob_sha1(old.data)
            files.append({"path": f["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False,
                          "oid": oid})
        return JSONResponse({"files": files})

    async def _lfs_batch(self, request: Request) -> Response:
        _, err = await self._guard(request)
        if err:
            return err
        objects = []
        for obj in (await request.json())["objects"]:
            entry = {"oid": obj["oid"], "size": obj["size"]}
            if obj["oid"] not in self.lfs_store:
                entry["actions"] = {"upload": {"href": f"{self.endpoint}/lfs/{obj['oid']}"}}
            objects.append(entry)
        return JSONResponse({"transfer": "basic", "objects": objects})

    async def _lfs_put(self, request: Request) -> Response:
        self.calls.append((request.method, request.url.path))
        data = await request.body()
        oid = request.path_params["oid"]
        if hashlib.sha256(data).hexdigest() != oid:
            return _error(400, "sha256 of the upload differs from its oid")
        self.lfs_store[oid] = data
        return Response(status_code=200)

    async def _commit(self, request: Request) -> Response:
        repo, err = await self._guard(request)
        if err:
            return err
        branch = request.path_params["rev"]
        head = repo.commit(branch)
        files = dict(head.files) if head else {}
        summary = ""
        for line in (await request.body()).splitlines():
            item = json.loads(line)
            key, value = item["key"], item["value"]
            if key == "header":
                summary = value["summary"]
            elif key == "file":
                files[value["path"]] = StoredFile(base64.b64decode(value["content"]), False)
            elif key == "lfsFile":
                if value["oid"] not in self.lfs_store:
                    return _error(422, f"LFS object {value['oid']} was never uploaded")
                files[value["path"]] = StoredFile(self.lfs_store[value["oid"]], True)
            elif key == "deletedFile":
                if files.pop(value["path"], None) is None:
                    return _error(404, "A file with this name doesn't exist")
            else:
                return _error(400, f"unsupported commit operation {key}")
        for path, data in self.tamper.items():
            if path in files:
                files[path] = StoredFile(data, files[path].lfs)
        with self._hub_lock:
            commit = repo.add_commit(summary, files, branch)
        return JSONResponse({"commitOid": commit.oid, "pullRequestUrl": None,
                             "commitUrl": f"{self.endpoint}/datasets/{repo.repo_id}/commit/{commit.oid}"})

    async def _tag(self, request: Request) -> Response:
        repo, err = await self._guard(request)
        if err:
            return err
        body = await request.json()
        commit = repo.commit(request.path_params["rev"])
        if commit is None:
            return _error(404, "Revision not found")
        if body["tag"] in repo.tags:
            return _error(409, f"Tag {body['tag']} already exists")
        repo.tags[body["tag"]] = commit.oid
        return JSONResponse({})

    async def _refs(self, request: Request) -> Response:
        repo, err = await self._guard(request)
        if err:
            return err
        def refs(kind: str, names: dict[str, str]) -> list[dict[str, str]]:
            return [{"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": oid} for n, oid in sorted(names.items())]
        return JSONResponse({"branches": refs("heads", repo.branches), "tags": refs("tags", repo.tags),
                             "converts": [], "pullRequests": []})

    async def _tree(self, request: Request) -> Response:
        repo, err = await self._guard(request)
        if err:
            return err
        commit = repo.commit(request.path_params["rev"])
        if commit is None:
            return _error(404, "Revision not found")
        prefix = request.path_params.get("path", "").strip("/")
        recursive = request.query_params.get("recursive", "").lower() in ("1", "true")
        entries: dict[str, dict[str, Any]] = {}
        for path, stored in sorted(commit.files.items()):
            if prefix and not path.startswith(prefix + "/"):
                continue
            rest = path[len(prefix) + 1:] if prefix else path
            parts = rest.split("/")
            base = f"{prefix}/" if prefix else ""
            for depth in range(1, len(parts)):
                folder = base + "/".join(parts[:depth])
                entries.setdefault(folder, {"type": "directory", "path": folder, "oid": "0" * 40, "size": 0})
                if not recursive:
                    break
            if recursive or len(parts) == 1:
                entries[path] = stored.entry(path)
        return JSONResponse(list(entries.values()))
