"""A small WSGI app that calls a tool per request, through a client connected at import time.

Served by gunicorn in tests/engines/test_gunicorn.py. With ``--preload`` the master imports it
(so the master connects, and every worker inherits the connected client across fork); without,
each worker imports it and connects itself. ``GET /?token=T`` answers the JSON of one echo of
``T`` (see :func:`tests.engines.common.echo_through`).
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterable, List, Tuple
from urllib.parse import parse_qs

import mcpsync
from tests.engines.common import demo_config, echo_through, note

client = mcpsync.connect(demo_config(), timeout=30)
note("imported", server=client.transport.pid)


def app(environ: dict, start_response: Callable[[str, List[Tuple[str, str]]], Any]) -> Iterable[bytes]:
    token = parse_qs(environ.get("QUERY_STRING", "")).get("token", [""])[0]
    try:
        answer = echo_through(client, token)
        answer["multithread"] = bool(environ.get("wsgi.multithread"))
        body = json.dumps(answer).encode()
        status = "200 OK"
    except Exception as exc:  # reported to the test, which fails on it
        body = json.dumps({"token": token, "error": f"{type(exc).__name__}: {exc}", "worker": os.getpid()}).encode()
        status = "500 Internal Server Error"
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
