"""``use_cassette``: record a real server once, replay it in every later run.

One cassette is one file holding every connection made while it is active, each tagged with
its number and target (a :class:`~mcpsync.Manager` with three servers records one file with
three connections). While replaying, each transport built from a target (``connect(argv)``,
``connect(url)``, a config dict, a Manager's servers) takes the first connection not yet
replayed whose recorded target is the same (when every one was, they are played again from
the first: connecting to one server twice in a test needs one recording); a target the
cassette lacks raises :class:`CassetteMismatch` when the transport is built.
"""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path
from typing import Any, Callable, Collection, List, Optional, Sequence, TypeVar, Union, cast

from .._protocol.methods import INITIALIZE
from .._session import era as _era
from .._session.session import takes_header_plans
from ..transports import _seam
from ..transports.base import Transport
from ._errors import CassetteError, CassetteMismatch
from ._format import Connection, Recording, dumps_line, read, write
from ._recorder import Recorder, describe
from ._replayer import MATCH_FIELDS, Replayer
from ._secrets import Filter
from ._transport import CassetteTransport

__all__ = ["RECORD_MODES", "Cassette", "use_cassette"]

#: The record modes (as vcrpy's): see :class:`Cassette`.
RECORD_MODES = ("once", "none", "all", "new_episodes")

F = TypeVar("F", bound=Callable[..., Any])

_active_lock = threading.Lock()
_active: List["Cassette"] = []


class Cassette:
    """One cassette file and how it is used; a context manager (and a decorator) that is active inside.

    ``record_mode``:

    * ``"once"`` (the default): record when the file does not exist, else replay only.
    * ``"none"``: replay only; a missing file is a :class:`CassetteError`.
    * ``"all"``: always record against the real servers, and overwrite the file.
    * ``"new_episodes"``: replay the connections the file holds, and record connections to
      targets it does not hold (an episode is a connection: an MCP session is a conversation, and
      one cannot go on against a real server half-way through), appending them to the file.

    ``match_on`` names what makes a request the recorded one: ``"method"`` and ``"params"``.
    ``filter_headers`` and ``filter_params`` name more headers (and argument flags) and JSON keys
    or URL query parameters to filter, besides the defaults (see :mod:`mcpsync._cassettes._secrets`).

    While active, every transport built from a target is either tapped (recording) or replaced by
    a stand-in (replaying); one cassette is active at a time in a process (a nested one raises
    :class:`CassetteError`). Attributes after use: ``recorded`` (connections recorded) and
    ``replayed`` (connections replayed).
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], *, record_mode: str = "once",
                 match_on: Sequence[str] = MATCH_FIELDS, filter_headers: Collection[str] = (),
                 filter_params: Optional[Collection[str]] = None) -> None:
        if record_mode not in RECORD_MODES:
            raise CassetteError(f"Unknown record_mode {record_mode!r}: expected one of {', '.join(RECORD_MODES)}")
        unknown = [name for name in match_on if name not in MATCH_FIELDS]
        if unknown or not match_on:
            raise CassetteError(f"match_on takes names from {MATCH_FIELDS}, not {list(match_on)!r}")
        if isinstance(filter_headers, str) or isinstance(filter_params, str):
            raise CassetteError("filter_headers and filter_params take a list of names, not one string")
        self.path = Path(path)
        self.record_mode = record_mode
        self.match_on = tuple(match_on)
        self.filter_headers = tuple(filter_headers)
        self.filter_params = tuple(filter_params) if filter_params is not None else None
        self.secrets = Filter(self.filter_headers, self.filter_params)
        self._lock = threading.Lock()
        self._recording: Optional[Recording] = None
        self._recorder: Optional[Recorder] = None
        self._claimed: List[bool] = []
        self._replayers: List[Replayer] = []
        self._previous: Optional[_seam.Interceptor] = None
        self.recorded = 0
        self.replayed = 0

    def __repr__(self) -> str:
        return f"<Cassette {str(self.path)!r} record_mode={self.record_mode!r}>"

    # -- activation ---------------------------------------------------------------------------

    def __enter__(self) -> "Cassette":
        exists = self.path.exists()
        if self.record_mode == "none" and not exists:
            raise CassetteError(f"The cassette {self.path} does not exist and record_mode is 'none' (replay only): "
                                "record it first (record_mode='once' or 'all')")
        replaying = exists and self.record_mode in ("once", "none", "new_episodes")
        recording = not exists or self.record_mode in ("all", "new_episodes")
        self._recording = read(self.path) if replaying else None
        self._claimed = [False] * (len(self._recording.connections) if self._recording else 0)
        self._recorder = Recorder(self.secrets) if recording else None
        with _active_lock:
            if _active:
                raise CassetteError(f"A cassette is already active ({_active[-1].path}): one at a time in a process")
            _active.append(self)
            self._previous = _seam.install(self._intercept)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        with _active_lock:
            _seam.install(self._previous)
            _active.remove(self)
        recorder = self._recorder
        if recorder is not None and recorder.connections:
            self._save(recorder)

    def __call__(self, fn: F) -> F:
        """Use the cassette around each call of ``fn``."""
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self._fresh():
                return fn(*args, **kwargs)
        return cast(F, wrapper)

    def _fresh(self) -> "Cassette":
        return Cassette(self.path, record_mode=self.record_mode, match_on=self.match_on,
                        filter_headers=self.filter_headers, filter_params=self.filter_params)

    # -- the seam -----------------------------------------------------------------------------

    def _intercept(self, transport: Transport) -> Transport:
        recording = self._recording
        if recording is not None:
            replayed = self._replay(transport, recording)
            if replayed is not None:
                return replayed
        assert self._recorder is not None
        with self._lock:
            self.recorded += 1
        # A recorded connection finds its server's era itself, as its replay will (a replay has no
        # era cache): so two recordings of one conversation are the same, whatever ran before.
        _era.cache.forget(_era.cache_key(transport))
        return self._recorder.tap(transport)

    def _replay(self, transport: Transport, recording: Recording) -> Optional[Transport]:
        """A stand-in replaying a recorded connection to ``transport``'s target; None: record it instead.

        Raises:
            CassetteMismatch: the cassette holds no connection to that target and records nothing.
        """
        target = describe(transport, self.secrets)
        with self._lock:
            same = [index for index, connection in enumerate(recording.connections)
                    if connection.transport == transport.kind and connection.target == target]
            if same:
                # The first one not yet replayed; once all were, they are played again from the first.
                index = next((i for i in same if not self._claimed[i]), same[0])
                self._claimed[index] = True
                self.replayed += 1
                return self._stand_in(transport, recording.connections[index], index)
        if self._recorder is not None:
            return None
        transport.close()
        held = "; ".join(f"{c.transport} {c.target}" for c in recording.connections) or "no connection"
        raise CassetteMismatch(
            f"The cassette {self.path} holds no connection to {transport.kind} {target}; it holds: "
            f"{held}. Connect to a recorded target, or record the cassette again (record_mode='all', or "
            "'new_episodes' to add this one)", request=target, closest=None, difference="another target")

    def _stand_in(self, transport: Transport, connection: Connection, index: int) -> Transport:
        replayer = Replayer(connection, self.secrets, self.match_on, where=f"the cassette {self.path}")
        self._replayers.append(replayer)
        detection = connection.detection
        if replayer.first_request == INITIALIZE:
            detection = "legacy"  # the era was known (cached) when it was recorded: no probe then
        attributes = {key: getattr(transport, key) for key in ("url", "command", "args") if hasattr(transport, key)}
        attributes["routes_tool_headers"] = takes_header_plans(transport)  # as the session decided it
        stand_in = CassetteTransport(replayer, kind=connection.transport, name=transport.name,
                                     timeout=transport.timeout, detection=detection, attributes=attributes)
        transport.close()  # unopened: nothing was started
        return stand_in

    # -- saving ---------------------------------------------------------------------------------

    def _save(self, recorder: Recorder) -> None:
        recording, _order = recorder.recording()
        # Each connection's lines together, the connections in the order of their targets (connections
        # to one target in the order they were made): servers a Manager starts in parallel connect in
        # any order, and the file must not depend on it. Replay needs no order across connections.
        recording.connections.sort(key=lambda c: (c.transport, dumps_line(c.target)))
        if self.record_mode == "new_episodes" and self._recording is not None:
            recording = Recording(self._recording.connections + recording.connections)
        write(self.path, recording)


def use_cassette(path: Union[str, "os.PathLike[str]"], *, record_mode: str = "once",
                 match_on: Sequence[str] = MATCH_FIELDS, filter_headers: Collection[str] = (),
                 filter_params: Optional[Collection[str]] = None) -> Cassette:
    """A :class:`Cassette` for ``path``: use it as a context manager or a decorator.

    ::

        with use_cassette("tests/cassettes/weather.jsonl"):
            with mcpsync.connect(["python", "weather_server.py"]) as client:
                client.call_tool("forecast", {"city": "Oslo"})

    Raises (when entered):
        CassetteError: the file is not a readable cassette (the line and what is wrong), or
            record_mode is ``"none"`` and it does not exist.
    """
    return Cassette(path, record_mode=record_mode, match_on=match_on, filter_headers=filter_headers,
                    filter_params=filter_params)
