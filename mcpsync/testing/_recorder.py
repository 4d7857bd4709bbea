"""What a FakeServer was asked: the request and notification log, scripted faults, waits and asserts.

The connections write to a :class:`Recorder` as messages arrive; tests read it
through the :class:`~mcpsync.testing.FakeServer` methods that delegate here.
Recording a request is also where a scripted fault (crash, hang, error) is
matched, so that "the n-th matching request" counts requests in the order the
server received them.

Thread safety: every method may be called from any thread. Recording never
blocks beyond a short lock; :meth:`Recorder.wait_for_request` and
:meth:`Recorder.wait_for_notification` block the caller until the record
arrives or their timeout passes.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, List, Mapping, Optional, Tuple, TypeVar

from .._protocol.methods import TOOLS_CALL
from .._rpc.jsonrpc import JSONObject, RequestId

__all__ = ["Fault", "RecordedNotification", "RecordedRequest", "Recorder"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received, as it arrived."""

    index: int
    """Position among every request this server received (from 1)."""
    method: str
    """The JSON-RPC method."""
    params: JSONObject
    """The request's ``params`` as received (empty when it had none)."""
    id: RequestId
    """The JSON-RPC id the client gave it."""
    era: Optional[str]
    """``"legacy"``, ``"modern"`` (2026-07-28 ``_meta``) or None (neither: refused)."""
    protocol_version: Optional[str]
    """The version it was served under (for ``initialize``: the version asked for)."""
    connection: int
    """Which connection it came on (from 1)."""
    retry: bool = False
    """A 2026-07-28 retry carrying ``requestState`` (it continues an earlier call)."""
    refused: Optional[str] = None
    """Why the server answered this ``tools/call`` without running the tool (an unknown tool,
    arguments its input schema refused), as the error it answered; None when the tool ran, and
    for every other method. A refused call stays in :attr:`FakeServer.requests` but is not one
    of :meth:`FakeServer.calls`: the tool was never called."""

    @property
    def tool(self) -> Optional[str]:
        """The tool name of a ``tools/call``."""
        name = self.params.get("name")
        return name if self.method == TOOLS_CALL and isinstance(name, str) else None

    @property
    def arguments(self) -> JSONObject:
        """The ``arguments`` of a ``tools/call`` or ``prompts/get`` (empty otherwise)."""
        arguments = self.params.get("arguments")
        return arguments if isinstance(arguments, dict) else {}

    @property
    def meta(self) -> JSONObject:
        """The request's ``_meta`` (empty when it had none)."""
        meta = self.params.get("_meta")
        return meta if isinstance(meta, dict) else {}


@dataclass(frozen=True)
class RecordedNotification:
    """One notification the client sent (``notifications/initialized``, ``notifications/cancelled``, ...)."""

    method: str
    """The notification's method."""
    params: JSONObject
    """Its ``params`` (empty when it had none)."""
    connection: int
    """Which connection it came on (from 1)."""


@dataclass
class Fault:
    """A scripted misbehaviour, fired by the ``nth`` request it matches (counted from when it was added)."""

    action: str  # "crash", "hang" or "error"
    nth: int
    method: Optional[str]
    tool: Optional[str]
    exit_code: int = 1
    code: int = 0
    message: str = ""
    data: Any = None
    seen: int = field(default=0, init=False)

    def matches(self, record: RecordedRequest) -> bool:
        if self.tool is not None:
            return record.tool == self.tool and not record.retry  # a retry continues a call already counted
        return self.method is None or record.method == self.method


class Recorder:
    """The log of one server's requests and notifications, and its pending faults.

    ``name`` gives the server's current name, for the messages of failed
    waits.
    """

    def __init__(self, name: Callable[[], str]) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # notified on every new record
        self._requests: List[RecordedRequest] = []
        self._notifications: List[RecordedNotification] = []
        self._faults: List[Fault] = []

    # -- written by the connections ---------------------------------------------------------

    def record_request(self, connection: int, request_id: RequestId, method: str, params: JSONObject,
                       era: Optional[str], version: Optional[str],
                       retry: bool) -> Tuple[RecordedRequest, Optional[Fault]]:
        """Log one request; return its record and the fault it fires, if any (that fault is used up)."""
        with self._changed:
            record = RecordedRequest(index=len(self._requests) + 1, method=method, params=copy.deepcopy(params),
                                     id=request_id, era=era, protocol_version=version,
                                     connection=connection, retry=retry)
            self._requests.append(record)
            fired = None
            for fault in self._faults:
                if fault.matches(record):
                    fault.seen += 1  # every matching fault counts the request, even when another fires
                    if fault.seen == fault.nth and fired is None:
                        fired = fault
            if fired is not None:
                self._faults.remove(fired)
            self._changed.notify_all()
        return record, fired

    def refuse(self, record: RecordedRequest, reason: str) -> None:
        """Mark ``record`` (a ``tools/call``) as answered with ``reason`` before its tool ran.

        Called on the request's worker thread before the answer is sent, so a
        client that has its answer reads the mark. A record forgotten by
        :meth:`reset` meanwhile stays forgotten.
        """
        with self._changed:
            for position in range(len(self._requests) - 1, -1, -1):
                if self._requests[position] is record:
                    self._requests[position] = dataclasses.replace(record, refused=reason)
                    self._changed.notify_all()
                    return

    def record_notification(self, connection: int, method: str, params: JSONObject) -> None:
        """Log one notification from the client."""
        with self._changed:
            self._notifications.append(RecordedNotification(method, copy.deepcopy(params), connection))
            self._changed.notify_all()

    # -- scripting ------------------------------------------------------------------------------

    def add_fault(self, fault: Fault) -> None:
        """Arm ``fault``; it counts requests from now.

        Raises:
            ValueError: ``fault.nth`` is below 1.
        """
        if fault.nth < 1:
            raise ValueError("n counts from 1")
        with self._lock:
            self._faults.append(fault)

    # -- read by tests ----------------------------------------------------------------------------

    @property
    def requests(self) -> List[RecordedRequest]:
        """Every request received, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def notifications(self) -> List[RecordedNotification]:
        """Every notification received, in order (a copy)."""
        with self._lock:
            return list(self._notifications)

    def calls(self, tool: str, *, include_refused: bool = False) -> List[JSONObject]:
        """The arguments of each call of ``tool`` that ran it, in order (a 2026-07-28 retry is not a new call).

        ``include_refused`` adds the calls answered before the tool ran
        (:attr:`RecordedRequest.refused`), in their places: everything the client asked.
        """
        return [r.arguments for r in self.requests
                if r.tool == tool and not r.retry and (include_refused or r.refused is None)]

    def reset(self) -> None:
        """Forget the records (pending faults stay)."""
        with self._lock:
            self._requests.clear()
            self._notifications.clear()

    def wait_for_request(self, method: str, *, tool: Optional[str] = None, count: int = 1,
                         timeout: float = 5.0) -> RecordedRequest:
        """Block until ``count`` matching requests have arrived; return the ``count``-th.

        Raises:
            AssertionError: they did not arrive within ``timeout`` seconds.
        """

        def matching() -> List[RecordedRequest]:
            return [r for r in self._requests
                    if r.method == method and (tool is None or (r.tool == tool and not r.retry))]

        found = self._wait(matching, count, timeout)
        if found is None:
            what = f"{method}" + (f" of {tool!r}" if tool else "")
            raise AssertionError(f"FakeServer {self._name()!r} did not receive {count} {what} request(s) within "
                                 f"{timeout}s; got {[r.method for r in self.requests]}")
        return found

    def wait_for_notification(self, method: str, *, count: int = 1,
                              timeout: float = 5.0) -> RecordedNotification:
        """Block until ``count`` notifications ``method`` have arrived; return the ``count``-th.

        Raises:
            AssertionError: they did not arrive within ``timeout`` seconds.
        """
        found = self._wait(lambda: [n for n in self._notifications if n.method == method], count, timeout)
        if found is None:
            raise AssertionError(f"FakeServer {self._name()!r} did not receive {count} {method} notification(s) "
                                 f"within {timeout}s; got {[n.method for n in self.notifications]}")
        return found

    def _wait(self, matching: Callable[[], List[_T]], count: int, timeout: float) -> Optional[_T]:
        """The ``count``-th of ``matching()`` (evaluated under the lock) once there is one, or None at the deadline."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = matching()
                if len(found) >= count:
                    return found[count - 1]
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._changed.wait(remaining)

    def assert_tool_called(self, name: str, /, **arguments: Any) -> None:
        """Assert ``name`` was called, with ``arguments`` among its arguments if any are given."""
        calls = self.calls(name)
        if not calls:
            called = sorted({r.tool for r in self.requests if r.tool and r.refused is None})
            raise AssertionError(f"Tool {name!r} was not called (called: {called or 'none'}){self._refusals(name)}")
        if arguments and not any(_has_arguments(call, arguments) for call in calls):
            raise AssertionError(f"Tool {name!r} was not called with {arguments!r}; its calls: {calls!r}"
                                 f"{self._refusals(name)}")

    def assert_tool_not_called(self, name: str) -> None:
        """Assert ``name`` never ran: a call refused before it ran (:attr:`RecordedRequest.refused`) passes."""
        calls = self.calls(name)
        if calls:
            raise AssertionError(f"Tool {name!r} was called {len(calls)} time(s): {calls!r}")

    def _refusals(self, tool: str) -> str:
        """For a failed assertion: the calls of ``tool`` refused before it ran, if there were any."""
        refused = [r for r in self.requests if r.tool == tool and r.refused is not None and not r.retry]
        if not refused:
            return ""
        return (f"; {len(refused)} call(s) of it were refused before it ran, the first with "
                f"{refused[0].arguments!r}: {refused[0].refused}")


def _has_arguments(call: Mapping[str, Any], arguments: Mapping[str, Any]) -> bool:
    """``call``'s arguments include every one of ``arguments``, with the same value."""
    return all(key in call and call[key] == value for key, value in arguments.items())
