"""Test helpers: blob builders that bypass the encoder, for feeding the decoder bad
input, and an ASGI app served by uvicorn on loopback."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgpack

SHARED = bytes.fromhex("a4d2")  # sha256("shared")[:2]


def header(
    type_byte: int = 0x01, flags: int = 0, ns: bytes = SHARED, sec: int = 1768471200
) -> bytes:
    return bytes([0x01, flags, type_byte]) + ns + sec.to_bytes(4, "big")


def raw_blob(wire: dict[str, Any] | Any, **kw: Any) -> bytes:
    """Header + msgpack of `wire` exactly in the order given (no canonicalisation)."""
    return header(**kw) + msgpack.packb(wire, use_bin_type=True)


def belief_wire(**changes: Any) -> dict[str, Any]:
    """A canonical short-key belief payload, with changes applied and re-sorted."""
    wire: dict[str, Any] = {
        "c": 0.9,
        "ca": 1768471200000,
        "o": "dark mode",
        "r": "prefers",
        "s": "user",
        "t": "belief",
    }
    wire.update(changes)
    return dict(sorted((k, v) for k, v in wire.items() if v is not None))


def free_port() -> int:
    """A loopback port nothing listens on at the moment of asking."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@contextmanager
def running(app: object) -> Iterator[str]:
    """Serve an ASGI app with uvicorn in a thread on a free loopback port; yield its
    base URL, and stop the server on leaving."""
    import uvicorn  # only the server tests need it

    config = uvicorn.Config(app, host="127.0.0.1", port=free_port(),  # type: ignore[arg-type]
                            log_level="warning", lifespan="off")  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
