"""A TCP listener that accepts connections and closes them without answering: a server that hangs up.

It counts the connections, so a test can tell how many attempts a client made against it.
"""
from __future__ import annotations

import socket
import threading


class HangUpServer:
    """A TCP listener on 127.0.0.1 that closes every connection without a byte; counts them."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)
        self.port = self._sock.getsockname()[1]
        self._count = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (socket.timeout, OSError):
                continue
            with self._lock:
                self._count += 1
            conn.close()

    def connections(self) -> int:
        with self._lock:
            return self._count

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()
