"""Serving a FakeServer on stdin and stdout: the stdio transport, server side.

:func:`serve_stdio` blocks the calling thread (the script's main thread)
reading stdin until it ends; the connection answers on its own threads, one
write at a time, flushed per message.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO, Optional

from .._rpc import jsonrpc as rpc
from .._rpc.jsonrpc import JSONObject
from ..exceptions import ProtocolError
from ._hub import Hub

__all__ = ["serve_stdio"]


def serve_stdio(hub: Hub, stdin: Optional[BinaryIO] = None, stdout: Optional[BinaryIO] = None) -> None:
    """Serve one connection of ``hub``: read newline-delimited JSON-RPC from ``stdin``, answer on ``stdout``.

    Returns when ``stdin`` ends, after the requests already read are answered
    (or a grace period passes).

    A scripted crash flushes a line to stderr and ends the process at once
    with its exit code, as a crashing server would.
    """
    reader = stdin if stdin is not None else sys.stdin.buffer
    writer = stdout if stdout is not None else sys.stdout.buffer
    saved_stdout = sys.stdout
    if stdout is None:
        sys.stdout = sys.stderr  # a stray print() must not corrupt the protocol stream

    def send(message: JSONObject) -> None:
        writer.write(rpc.encode(message) + b"\n")
        writer.flush()

    def crash(reason: str, exit_code: int) -> None:
        sys.stderr.write(f"{reason}\n")
        sys.stderr.flush()
        os._exit(exit_code)

    connection = hub.open(send, crash)
    try:
        for line in iter(reader.readline, b""):
            if not line.strip():
                continue
            try:
                message = rpc.decode(line)
            except ProtocolError as exc:
                connection.send(rpc.make_error(None, rpc.PARSE_ERROR, f"Parse error: {exc}"))
                continue
            connection.receive(message)
        connection.drain()
    finally:
        connection.close("stdin closed")
        sys.stdout = saved_stdout
