"""``mcpsync replay CASSETTE``: serve one recorded connection as a stdio MCP server.

Any client (the official SDK's, an agent, a conformance harness) can then be tested against a
recording. The client introduces itself its own way, so ``initialize`` and ``server/discover``
match on their method alone, and ``_meta`` is left out of every comparison; everything else
must be what was recorded. A request the recording does not hold gets a JSON-RPC error whose
message is the mismatch (a server cannot raise in its client); a recorded server request
(sampling, elicitation, roots) is sent to the client, and an answer unlike the recorded one is
reported on stderr.
"""

from __future__ import annotations

import sys
from typing import Any, BinaryIO, Optional, Union

from .._protocol.methods import INITIALIZE, SERVER_DISCOVER
from .._rpc.jsonrpc import decode, encode
from ..exceptions import ProtocolError
from ._errors import CassetteError, CassetteMismatch
from ._format import read
from ._replayer import Replayer
from ._secrets import Filter

__all__ = ["serve"]

#: The JSON-RPC error code of an answer to a request the cassette does not hold.
MISMATCH_CODE = -32000


def serve(path: str, connection: int = 0, stdin: Optional[BinaryIO] = None,
          stdout: Optional[BinaryIO] = None, stderr: Any = None) -> int:
    """Serve connection ``connection`` of the cassette at ``path`` on stdin/stdout until stdin ends.

    Returns the exit code (0). Raises:
        CassetteError: the cassette is unreadable, or has no such connection.
    """
    recording = read(path)
    if not 0 <= connection < len(recording.connections):
        raise CassetteError(f"The cassette {path} holds {len(recording.connections)} connection(s), numbered from 0: "
                            f"there is no connection {connection}")
    replayer = Replayer(recording.connections[connection], Filter(), where=f"the cassette {path}",
                        lenient=(INITIALIZE, SERVER_DISCOVER), ignore_meta=True)
    source = stdin if stdin is not None else sys.stdin.buffer
    sink = stdout if stdout is not None else sys.stdout.buffer
    errors = stderr if stderr is not None else sys.stderr

    def write(message: Any) -> None:
        sink.write(encode(message) + b"\n")
        sink.flush()

    for raw in source:
        if not raw.strip():
            continue
        try:
            message: Union[Any] = decode(raw)
        except ProtocolError as exc:
            errors.write(f"mcpsync replay: skipping a line that is not JSON-RPC: {exc}\n")
            continue
        for item in message if isinstance(message, list) else [message]:
            _answer(replayer, item, write, errors)
    return 0


def _answer(replayer: Replayer, message: Any, write: Any, errors: Any) -> None:
    try:
        actions = replayer.client_message(message)
    except CassetteMismatch as exc:
        if isinstance(message, dict) and "method" in message and "id" in message:
            write({"jsonrpc": "2.0", "id": message["id"], "error": {"code": MISMATCH_CODE, "message": str(exc)}})
        else:
            errors.write(f"mcpsync replay: {exc}\n")
        return
    for kind, item in actions:
        if kind == "recv":
            write(item)
        elif kind == "fail":
            live_id, spec = item
            write({"jsonrpc": "2.0", "id": live_id,
                   "error": {"code": MISMATCH_CODE, "message": f"(recorded) {spec.get('message', '')}"}})
        # "timeout": the recording's client stopped waiting; this one gets no answer either
