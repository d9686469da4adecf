"""The embedded default model: Gemma 3 270M (GGUF, from PyPI) served by llama.cpp's OpenAI-compatible server.

    with LocalModelServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="local")
        client.chat.completions.create(model=server.model, messages=[...])

The server is the engine (carryon_eval.model.engine: llama.cpp's own server from the prebuilt xllamacpp
wheel) run as `python -m carryon_eval.model.engine ...` in its own process group; it writes its output to a
log file (never the terminal), and is stopped - SIGTERM to the group, SIGKILL after a grace period -
when the context exits for any reason, at interpreter exit, on SIGTERM and, on Linux, when the thread
that started it dies (PR_SET_PDEATHSIG), so that no server outlives the run that started it. A server
that exits on its own (a crash: a signal or an exit code) is seen: ``crash()`` names it, and the endpoints
wrapped in ``ServerWatch`` end their calls at once with ``LocalServerCrashed`` (the signal and the log).

Gemma 3 270M is a *base* model: it is here so that the whole pipeline can be run offline with no API
key. Its outputs measure nothing (see LOCAL_MODEL_NOTICE).

System messages: this GGUF carries no chat template, and a plain Gemma format drops system messages.
By default the server is therefore given a small Gemma-style Jinja template
(carryon_eval/model/local_files.py) that, like Gemma 3's own template, puts the system text at the start of the
first user turn. Pass chat_format="gemma" to get llama.cpp's built-in Gemma format instead.
"""
from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Optional, Sequence

from carryon_eval import defaults
from carryon_eval.model import engine
from carryon_eval.model.crash import LocalServerCrashed, ServerWatch, exit_description
from carryon_eval.model.local_files import (LOCAL_EXTRA_HINT, SYSTEM_FOLDING_FORMAT, LocalModelError, LocalModelUnavailable,
                                _sha256, _system_folding_template, cache_dir, check_installed, ensure_model_file)

__all__ = ["LOCAL_ENDPOINT", "LOCAL_EXTRA_HINT", "LOCAL_MAX_TOKENS", "LOCAL_MODEL_ALIAS", "LOCAL_MODEL_NOTICE",
           "LocalModelError", "LocalModelServer", "LocalModelUnavailable", "LocalServerCrashed", "ServerWatch",
           "cache_dir", "check_installed", "ensure_model_file", "is_local", "_sha256", "_system_folding_template"]

LOCAL_ENDPOINT = "local"
LOCAL_MODEL_ALIAS = "gemma-3-270m"
LOCAL_MODEL_NOTICE = ("The embedded model is Gemma 3 270M, a small base model that was not tuned to follow "
                      "instructions: this run is a smoke test of the pipeline, not a measurement of any model.")

# Defaults measured on a 2-core machine (bench/local_model_latency.py, numbers in bench/README.md).
DEFAULT_N_CTX = 8192
DEFAULT_N_BATCH = 512
DEFAULT_N_THREADS = 1
DEFAULT_STARTUP_TIMEOUT = 180.0
DEFAULT_STOP_GRACE = 5.0
# Token limits of roles on the embedded model (defaults.LOCAL_MAX_TOKENS) let the default run of the
# built-in sample finish in about 5 minutes on 2 cores (bench/README.md): the base model almost never
# ends a turn by itself, so every call runs to its limit; with the general defaults the run takes hours.
LOCAL_MAX_TOKENS = defaults.LOCAL_MAX_TOKENS
LOG_TAIL_LINES = 30
#: what the log says when the port was taken (the OS's words, and llama.cpp's own)
PORT_TAKEN = ("address already in use", "couldn't bind http server socket")
KEEP_LOGS = 20


def is_local(endpoint: Optional[str]) -> bool:
    """True for the embedded default: no endpoint at all, or the word "local"."""
    return endpoint is None or endpoint.strip().lower() == LOCAL_ENDPOINT


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# The child runs this first: on Linux it asks the kernel to SIGKILL it when the thread that started
# it exits (even if that process is SIGKILLed), checks the parent did not die in between, then becomes
# the llama.cpp server (exec keeps the death signal).
_BOOT = """\
import ctypes, os, signal, sys
parent = int(sys.argv[1])
if parent and sys.platform.startswith("linux"):
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass
    if os.getppid() != parent:
        sys.exit(1)
os.execv(sys.executable, [sys.executable] + sys.argv[2:])
"""

# ---------------------------------------------------------------- process bookkeeping
_LIVE: "set[LocalModelServer]" = set()
_LIVE_LOCK = threading.Lock()
_PREV_SIGTERM: Any = None
_SIGTERM_INSTALLED = False


def _stop_all() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        server.stop()


atexit.register(_stop_all)


def _on_sigterm(signum: int, frame: Any) -> None:
    prev = _PREV_SIGTERM          # read first: stopping the last server restores (and forgets) it
    _stop_all()
    _restore_sigterm()
    if callable(prev):
        prev(signum, frame)
    elif prev == signal.SIG_IGN:
        return
    else:  # SIG_DFL (or unknown): die of SIGTERM as if we had never caught it
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)


def _install_sigterm() -> None:
    global _PREV_SIGTERM, _SIGTERM_INSTALLED
    if _SIGTERM_INSTALLED or threading.current_thread() is not threading.main_thread():
        return
    try:
        _PREV_SIGTERM = signal.signal(signal.SIGTERM, _on_sigterm)
        _SIGTERM_INSTALLED = True
    except ValueError:  # not the main interpreter
        pass


def _restore_sigterm() -> None:
    global _PREV_SIGTERM, _SIGTERM_INSTALLED
    if not _SIGTERM_INSTALLED or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, _PREV_SIGTERM if _PREV_SIGTERM is not None else signal.SIG_DFL)
    _PREV_SIGTERM = None
    _SIGTERM_INSTALLED = False


# ---------------------------------------------------------------- the server
class LocalModelServer:
    """Gemma 3 270M behind llama.cpp's OpenAI-compatible server on 127.0.0.1, for one `with` block.

    Attributes once started: base_url ("http://127.0.0.1:PORT/v1"), model ("gemma-3-270m"), port, pid,
    model_path, log_path, command.
    """

    def __init__(self, *, n_ctx: int = DEFAULT_N_CTX, n_threads: Optional[int] = None,
                 n_threads_batch: Optional[int] = None, n_batch: int = DEFAULT_N_BATCH,
                 chat_format: str = SYSTEM_FOLDING_FORMAT, port: Optional[int] = None,
                 log_path: Optional[os.PathLike | str] = None, model_dir: Optional[os.PathLike | str] = None,
                 startup_timeout: float = DEFAULT_STARTUP_TIMEOUT, stop_grace: float = DEFAULT_STOP_GRACE,
                 extra_args: Sequence[str] = ()):
        self.n_ctx = n_ctx
        self.n_threads = n_threads or DEFAULT_N_THREADS                      # generation
        self.n_threads_batch = n_threads_batch or _default_threads()         # prompt processing
        self.n_batch = n_batch
        self.chat_format = chat_format
        self.requested_port = port
        self.requested_log_path = Path(log_path) if log_path is not None else None
        self.model_dir = Path(model_dir) if model_dir is not None else None
        self.startup_timeout = startup_timeout
        self.stop_grace = stop_grace
        self.extra_args = list(extra_args)
        self.model = LOCAL_MODEL_ALIAS
        self.port: Optional[int] = None
        self.model_path: Optional[Path] = None
        self.log_path: Optional[Path] = None
        self.command: list[str] = []
        self._proc: Optional[subprocess.Popen] = None
        self._log_fh: Any = None
        self._crash: Optional[LocalServerCrashed] = None
        self._stopping = False
        self._log_from = 0

    # -- public
    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LocalModelError("the local model server is not running")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def crash(self) -> Optional[LocalServerCrashed]:
        """The error to raise if the server, once ready, exited on its own (a signal or an exit code); None while
        it runs, or when stop() ended it. Cheap (one waitpid): ServerWatch asks it while its calls wait."""
        if self._crash is None and self._proc is not None and not self._stopping:
            code = self._proc.poll()
            if code is not None:
                self._crash = LocalServerCrashed(exit_description(code), self.log_path)
        return self._crash

    def watch(self, endpoint: Any) -> ServerWatch:
        """``endpoint`` (on this server), ending its calls with LocalServerCrashed once the server has crashed."""
        return ServerWatch(endpoint, self.crash)

    def __enter__(self) -> "LocalModelServer":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> "LocalModelServer":
        if self._proc is not None:
            raise LocalModelError("the local model server is already running")
        check_installed()
        self.model_path = ensure_model_file(self.model_dir)
        try:
            attempts = 1 if self.requested_port else 3
            for attempt in range(attempts):
                self._launch(self.requested_port or _free_port())
                try:
                    self._wait_ready()
                    return self
                except LocalModelError:
                    # Another process may have taken the free port between our probe and the bind.
                    if attempt + 1 < attempts and any(w in self._log_tail().lower() for w in PORT_TAKEN):
                        self.stop()
                        continue
                    raise
        except BaseException:  # includes KeyboardInterrupt while the model loads
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after stop_grace seconds; idempotent."""
        proc = self._proc
        if proc is None:
            return
        self._stopping = True           # exiting now is no crash
        try:
            if proc.poll() is None:
                self._signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=self.stop_grace)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            # Also runs when a second Ctrl-C interrupts the wait above. The group outlives its leader
            # if the server forked, so it is killed as a whole either way.
            self._signal_group(proc.pid, signal.SIGKILL)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self._proc = None
            self.port = None
            if self._log_fh is not None:
                self._log_fh.close()
                self._log_fh = None
            with _LIVE_LOCK:
                _LIVE.discard(self)
                last = not _LIVE
            if last:
                _restore_sigterm()

    # -- internals
    def _command(self, port: int) -> list[str]:
        assert self.model_path is not None
        folded = self.chat_format == SYSTEM_FOLDING_FORMAT
        return engine.command(
            model_path=self.model_path, alias=self.model, port=port, n_ctx=self.n_ctx, n_threads=self.n_threads,
            n_threads_batch=self.n_threads_batch, n_batch=self.n_batch,
            chat_template_file=_system_folding_template(self.model_path.parent) if folded else None,
            chat_template=None if folded else self.chat_format, extra_args=self.extra_args)

    def _new_log_path(self) -> Path:
        if self.requested_log_path is not None:
            self.requested_log_path.parent.mkdir(parents=True, exist_ok=True)
            return self.requested_log_path
        logs = cache_dir() / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        old = sorted(logs.glob("llama-server-*.log"), key=lambda p: p.stat().st_mtime)
        for p in old[:-KEEP_LOGS] if len(old) > KEEP_LOGS else []:
            p.unlink(missing_ok=True)
        return logs / f"llama-server-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"

    def _launch(self, port: int) -> None:
        self._crash, self._stopping = None, False
        self.port = port
        self.command = self._command(port)
        self.log_path = self._new_log_path()
        self._log_fh = open(self.log_path, "ab")
        self._log_fh.write(f"$ {' '.join(self.command)}\n".encode())
        self._log_fh.flush()
        self._log_from = self._log_fh.tell()        # this launch's lines start here (a given log is appended to)
        on_main = threading.current_thread() is threading.main_thread()
        # The death signal is tied to the *thread* that forks; from another thread it would kill the
        # server when that thread ends, so it is only asked for from the main thread.
        parent = os.getpid() if on_main else 0
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_ARG_")}  # llama.cpp reads these
        with _LIVE_LOCK:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(parent), *self.command[1:]],
                stdin=subprocess.DEVNULL, stdout=self._log_fh, stderr=subprocess.STDOUT,
                start_new_session=True, env=env, close_fds=True)
            _LIVE.add(self)
        if on_main:
            _install_sigterm()

    def _wait_ready(self) -> None:
        assert self._proc is not None
        url = f"http://127.0.0.1:{self.port}/v1/models"
        deadline = time.monotonic() + self.startup_timeout
        while True:
            code = self._proc.poll()
            if code is not None:
                raise LocalModelError(
                    f"the local model server exited ({exit_description(code)}) before answering "
                    f"(log: {self.log_path}); last lines:\n{self._log_tail()}")
            try:
                # our own server: it said it listens (after its bind), so another one listing the model on this
                # port is never taken for it
                if self._serving():
                    with urllib.request.urlopen(url, timeout=2) as resp:
                        if resp.status == 200 and any(m.get("id") == self.model
                                                      for m in json.load(resp).get("data", [])):
                            return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise LocalModelError(
                    f"the local model server did not answer {url} within {self.startup_timeout:.0f} s "
                    f"(log: {self.log_path}); last lines:\n{self._log_tail()}")
            time.sleep(0.25)

    def _serving(self) -> bool:
        """Whether this launch's engine logged that it serves (engine.serve prints it once its socket is bound)."""
        if self.log_path is None or self._log_fh is None:
            return False
        self._log_fh.flush()
        with self.log_path.open("rb") as fh:
            fh.seek(self._log_from)
            said = engine.serving(self.model).encode() in fh.read()
        return said and self._proc is not None and self._proc.poll() is None

    def _log_tail(self, n: int = LOG_TAIL_LINES) -> str:
        if self.log_path is None or not self.log_path.is_file():
            return "(no log)"
        if self._log_fh is not None:
            self._log_fh.flush()
        with self.log_path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 16384))
            lines = fh.read().decode("utf-8", "replace").splitlines()
        return "\n".join("    " + line for line in lines[-n:])

    @staticmethod
    def _signal_group(pgid: int, sig: int) -> None:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def __repr__(self) -> str:
        state = f"{self.base_url} pid={self.pid}" if self.running else "stopped"
        return f"LocalModelServer({self.model}, {state})"


def main(argv: Optional[list[str]] = None) -> int:
    """`python -m carryon_eval.model.local`: serve the embedded model until Ctrl-C (for trying it by hand)."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--port", type=int)
    ap.add_argument("--n-threads", type=int)
    ap.add_argument("--n-ctx", type=int, default=DEFAULT_N_CTX)
    args = ap.parse_args(argv)
    try:
        with LocalModelServer(port=args.port, n_threads=args.n_threads, n_ctx=args.n_ctx) as server:
            print(LOCAL_MODEL_NOTICE, file=sys.stderr)
            print(f"serving {server.model} at {server.base_url} (log: {server.log_path}); Ctrl-C stops it",
                  file=sys.stderr)
            while server.crash() is None:
                time.sleep(1)
            print(f"error: {server.crash()}", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        return 130
    except LocalModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
