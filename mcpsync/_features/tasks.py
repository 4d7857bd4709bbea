"""The tasks room: tool calls that run in the background on the server, behind one :class:`Task` handle.

Two protocols, one handle:

* 2025-11-25 (experimental, core): ``tools/call`` with ``params.task`` gives a
  ``CreateTaskResult``; the client polls ``tasks/get``, fetches the outcome
  with ``tasks/result`` (which blocks, serving the server's requests for input
  meanwhile), and cancels with ``tasks/cancel``. A tool's
  ``execution.taskSupport`` says whether it may (``"optional"``) or must
  (``"required"``) run as a task.
* 2026-07-28, the tasks extension (``io.modelcontextprotocol/tasks``): the
  server may answer ``tools/call`` with ``resultType: "task"``; ``tasks/get``
  carries the outcome inline, and the server's requests for input
  (``inputRequests``) are answered with ``tasks/update``.

::

    task = client.call_tool("render", {"scene": 3}, task=True)
    print(task.id, task.status())
    result = task.result(timeout=600)     # waits, polling at the server's pace

A :class:`Task` holds its server conversation through the narrow
:class:`~mcpsync._session.session.SessionHandle` (requests and the client's
input handlers), never the :class:`~mcpsync.Client` itself. Every ``timeout`` a
Task method takes is in seconds: for :meth:`Task.status` and :meth:`Task.cancel` one
request; for :meth:`Task.wait` and :meth:`Task.result` the whole wait, every poll
included.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Set

from .._log import getLogger
from .._protocol.methods import TASKS_CANCEL, TASKS_GET, TASKS_LIST, TASKS_RESULT, TASKS_UPDATE
from .._rpc.jsonrpc import JSONObject
from .._rpc.options import DEFAULT_OPTIONS, CallOptions
from .._session.meta import TASKS_EXTENSION
from .._session.mrtr import answer_all
from .._session.session import Session, SessionHandle
from ..cancel import CancelToken
from ..exceptions import CapabilityError, MCPError, ProtocolError, RequestCancelled, RequestTimeout
from ..types import CallToolResult, MCPObject, _Field

__all__ = ["DEFAULT_POLL_INTERVAL", "MAX_POLL_INTERVAL", "TERMINAL", "Task", "TaskInfo", "list_tasks"]

log = getLogger("mcpsync.tasks")

TERMINAL = frozenset({"completed", "failed", "cancelled"})
DEFAULT_POLL_INTERVAL = 1.0
#: The longest pause between two polls, whatever the server asks for (seconds).
MAX_POLL_INTERVAL = 60.0
_MIN_POLL_INTERVAL = 0.01


class TaskInfo(MCPObject):
    """A task's state as the server last reported it."""

    __slots__ = ()
    _repr_fields = ("task_id", "status", "status_message")
    task_id: _Field[str] = _Field("taskId", "")
    status: _Field[str] = _Field("status", "working")
    status_message: _Field[Optional[str]] = _Field("statusMessage", None)
    created_at: _Field[Optional[str]] = _Field("createdAt", None)
    last_updated_at: _Field[Optional[str]] = _Field("lastUpdatedAt", None)

    @property
    def ttl(self) -> Optional[float]:
        """Seconds the server keeps the task after creation (None: no limit or not said)."""
        value = self._data.get("ttlMs", self._data.get("ttl"))
        return value / 1000.0 if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    @property
    def poll_interval(self) -> Optional[float]:
        """The polling pace the server asks for, in seconds, at most :data:`MAX_POLL_INTERVAL`.

        None when the server gave none, or gave something that is not a finite, non-negative
        number (a hostile ``pollInterval`` must not stall or crash a wait).
        """
        value = self._data.get("pollIntervalMs", self._data.get("pollInterval"))
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
            return None
        return min(value / 1000.0, MAX_POLL_INTERVAL)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


class Task:
    """A tool call running as a task on the server.

    Attributes:
        id: the server's task id.
        info: the :class:`TaskInfo` last seen.

    Thread safety: the methods may be called from any thread; ``wait`` and
    ``result`` from several threads at once poll independently.
    """

    def __init__(self, session: SessionHandle, info: JSONObject, *, modern: bool, tool: str = "",
                 result: Optional[JSONObject] = None) -> None:
        self._session = session
        self._modern = modern
        self.tool = tool
        self._raw: JSONObject = dict(info)  # the wire form of ``info`` (kept: later updates merge into it)
        self.info = TaskInfo.from_dict(dict(info))
        self.id: str = self.info.task_id
        self._lock = threading.Lock()
        self._answered: Set[str] = set()
        self._result: Optional[JSONObject] = result
        self._error: Optional[MCPError] = None
        if not self.id and result is None:
            raise ProtocolError("The server created a task without a taskId")

    def __repr__(self) -> str:
        return f"<Task {self.id!r} {self.tool!r} {self.info.status}>"

    @classmethod
    def completed(cls, session: SessionHandle, tool: str, result: JSONObject, modern: bool) -> "Task":
        """A handle for a call the server answered at once (it chose not to make a task)."""
        return cls(session, {"taskId": "", "status": "completed"}, modern=modern, tool=tool, result=result)

    # -- polling ---------------------------------------------------------------------------------------

    def status(self, *, timeout: Optional[float] = None) -> str:
        """Ask the server once (``tasks/get``) and return the status.

        One of ``working``, ``input_required``, ``completed``, ``failed``, ``cancelled``.
        """
        if not self.id:
            return self.info.status
        info = self._ask(TASKS_GET, {"taskId": self.id}, timeout)
        if not isinstance(info, dict):
            raise ProtocolError("tasks/get returned a non-object result")
        self._note(info)
        return self.info.status

    def wait(self, timeout: Optional[float] = None, *, cancel: Optional[CancelToken] = None) -> str:
        """Block until the task ends; return its final status.

        Polls ``tasks/get`` at the server's ``pollInterval``. When the task
        needs input, the client's handlers answer it (2025-11-25: through the
        blocking ``tasks/result``; 2026-07-28: with ``tasks/update``).
        ``timeout`` is in seconds (None: no limit).

        Raises:
            RequestTimeout: still running after ``timeout``.
            RequestCancelled: ``cancel`` fired (the task itself goes on; see :meth:`cancel`).
        """
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        while True:
            status = self.status(timeout=_remaining(deadline, timeout))
            if status in TERMINAL:
                return status
            if status == "input_required":
                if not self._modern:
                    self._fetch_result(deadline, timeout)
                    return self.status(timeout=_remaining(deadline, timeout))
                self._answer_inputs()
                continue
            pause = min(max(self.info.poll_interval or DEFAULT_POLL_INTERVAL, _MIN_POLL_INTERVAL),
                        max(deadline - time.monotonic(), 0.0))
            if pause <= 0:
                raise RequestTimeout(f"Task {self.id} still {status} after {round((timeout or 0) * 1000)}ms",
                                     method=TASKS_GET, timeout=timeout or 0.0)
            if cancel is not None:
                if cancel.wait(pause):
                    raise RequestCancelled(cancel.reason)
            else:
                threading.Event().wait(pause)

    def result(self, timeout: Optional[float] = None) -> CallToolResult:
        """The tool's result, once the task has ended (waits for it).

        A result with ``is_error`` is returned, as from ``call_tool``.

        Raises:
            MCPError: the task failed with a JSON-RPC error.
            RequestCancelled: the task was cancelled.
            RequestTimeout: not done within ``timeout`` seconds.
        """
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        with self._lock:
            ready = self._result is not None or self._error is not None
        if not ready:
            if self._modern:
                self.wait(timeout)
            else:
                self._fetch_result(deadline, timeout)
        with self._lock:
            result, error = self._result, self._error
        if error is not None:
            raise error
        if result is None:
            if self.info.status == "cancelled":
                raise RequestCancelled(self.info.status_message or f"task {self.id} was cancelled")
            raise ProtocolError(f"Task {self.id} ended {self.info.status!r} without a result")
        return CallToolResult.from_dict(dict(result))

    def cancel(self, *, timeout: Optional[float] = None) -> None:
        """Ask the server to cancel the task (``tasks/cancel``; never ``notifications/cancelled``).

        Cancelling is cooperative: the task may still end otherwise.
        """
        if self.id:
            info = self._ask(TASKS_CANCEL, {"taskId": self.id}, timeout)
            if isinstance(info, dict) and info.get("status"):
                self._note(info)

    # -- internals --------------------------------------------------------------------------------------

    def _ask(self, method: str, params: JSONObject, timeout: Optional[float]) -> Any:
        """One ``tasks/*`` request (declaring the tasks extension on modern servers, as it requires)."""
        options = DEFAULT_OPTIONS if timeout is None else CallOptions(timeout=timeout)
        return self._session.call(method, params, options, extension=TASKS_EXTENSION if self._modern else None)

    def _note(self, info: JSONObject) -> None:
        with self._lock:
            self._raw = dict(info)
            self.info = TaskInfo.from_dict(dict(info))
            if self._modern and self.info.status == "completed" and isinstance(info.get("result"), dict):
                self._result = info["result"]
            elif self._modern and self.info.status == "failed":
                found = info.get("error")
                error: JSONObject = found if isinstance(found, dict) else {}
                self._error = MCPError.from_wire({"message": "Task failed", **error})

    def _fetch_result(self, deadline: float, timeout: Optional[float]) -> None:
        """2025-11-25: ``tasks/result`` blocks until the task ends, carrying its requests for input."""
        try:
            result = self._ask(TASKS_RESULT, {"taskId": self.id}, _remaining(deadline, timeout) or math.inf)
        except MCPError as exc:
            with self._lock:
                self._error = exc
                self._set_status_locked("failed")
            return
        if not isinstance(result, dict):
            raise ProtocolError("tasks/result returned a non-object result")
        with self._lock:
            self._result = result
            # tasks/result answers only once the task has ended; isError results count as failed (2025-11-25).
            self._set_status_locked("failed" if result.get("isError") else "completed")

    def _set_status_locked(self, status: str) -> None:
        self._raw = {**self._raw, "status": status}
        self.info = TaskInfo.from_dict(dict(self._raw))

    def _answer_inputs(self) -> None:
        """2026-07-28: answer the task's new ``inputRequests`` with ``tasks/update`` (each key once)."""
        with self._lock:
            requests = self._raw.get("inputRequests")
        pending: Dict[str, Any] = {key: request for key, request in (requests or {}).items()
                                   if key not in self._answered} if isinstance(requests, dict) else {}
        if not pending:
            threading.Event().wait(min(self.info.poll_interval or DEFAULT_POLL_INTERVAL, 1.0))
            return
        responses = answer_all(pending, self._session.answer, TASKS_UPDATE)
        self._answered.update(responses)
        self._ask(TASKS_UPDATE, {"taskId": self.id, "inputResponses": responses}, None)


def infos(items: List[Any]) -> List[TaskInfo]:
    return [TaskInfo.from_dict(item) for item in items if isinstance(item, dict)]


def list_tasks(session: Session, pages: Callable[[str, str, CallOptions], Iterable[Any]],
               options: CallOptions) -> List[TaskInfo]:
    """``tasks/list`` (2025-11-25 only), every page as TaskInfo; see ``Client.list_tasks``.

    Raises:
        CapabilityError: a modern server, or one that does not offer ``tasks.list``.
    """
    tasks = session.server_capabilities.get("tasks")
    if session.modern or not (isinstance(tasks, dict) and "list" in tasks):
        raise CapabilityError(f"Server {session.name!r} does not offer 'tasks.list'; cannot list tasks")
    return infos(list(pages(TASKS_LIST, "tasks", options)))


def _remaining(deadline: float, timeout: Optional[float]) -> Optional[float]:
    if timeout is None:
        return None
    return max(deadline - time.monotonic(), 0.001)
