"""The tools feature: one ``tools/call`` from the client's arguments to its result, end to end.

:func:`call_tool` is the whole call: the fast path (a legacy session whose server runs no tool
as a task), or header plans and the task decision (:class:`ToolCalls`), the wait for a task a
plain call became (:func:`call_as_task`), the result built here, and its output limit applied
(:mod:`.spill`). The public :class:`~mcpsync.Task` handle and the session are below it.

* Modern (2026-07-28): the call declares the tasks extension when the caller asked
  for a task (or the client always does); over Streamable HTTP it goes out with the
  tool's header plan (see :class:`~mcpsync._features.toolbook.ToolBook`). The server
  decides whether to answer at once or with a task.
* Legacy (2025-11-25): the tool's ``execution.taskSupport`` decides: ``"required"``
  makes every call a task, ``"optional"`` allows ``task=True``, anything else refuses it.

:meth:`ToolCalls.call` returns the created task's info (the caller wraps it in a
:class:`~mcpsync.Task`) or the plain result; it never waits for a task itself.

Threads: any number of threads may call at once; each blocks for its own requests
(and, the first time, for the tool list the header plans or the task support need).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Tuple, Union

from .._protocol.methods import TOOLS_CALL
from .._rpc.jsonrpc import JSONObject
from .._rpc.options import DEFAULT_OPTIONS, CallOptions, Deadline
from .. import retry as _retry
from .._session.limits import Limits
from .._session.session import SessionHandle, call_options
from ..exceptions import CapabilityError, ProtocolError
from .tasks import Task
from ..types import CallToolResult
from .lists import Lists
from .._session.meta import TASKS_EXTENSION
from .._session.mrtr import TASK, result_type
from .._session.session import Session
from .spill import cut, limit
from .toolbook import ToolBook, offers_tool_tasks

__all__ = ["ToolCalls", "call_as_task", "call_tool", "call_tool_limited", "call_tool_retried", "parse_created",
           "tool_result"]


def call_tool(session: Session, tool_calls: "ToolCalls", name: str, arguments: Optional[Mapping[str, Any]],
              task: bool, options: CallOptions, *, always: bool) -> Union[CallToolResult, Task]:
    """One ``tools/call``: the result (its output limit applied) or, for ``task=True``, the Task handle.

    ``options.deadline``, when set, ends a task-backed wait; ``always`` is ``Client(tasks=True)``.
    See :meth:`mcpsync.Client.call_tool` for what it raises.
    """
    params: JSONObject = {"name": name, "arguments": dict(arguments) if arguments else {}}
    if session.plain_tool_calls and not task:
        # The hot path: a legacy session whose server runs no tool as a task.
        return tool_result(session.legacy_call(TOOLS_CALL, params, options), options)
    session.require("tools", what=f"call tool {name!r}")
    return limit(call_as_task(session, tool_calls, params, task, options, always=always), options)


def call_tool_limited(session: Session, tool_calls: "ToolCalls", limits: Optional[Limits], name: str,
                      arguments: Optional[Mapping[str, Any]], task: bool, options: CallOptions, *,
                      always: bool) -> Union[CallToolResult, Task]:
    """:func:`call_tool` after a turn under the client's ``rate_limit`` and ``max_concurrency`` (``limits``,
    None when it has neither); the wait for the turn counts in the call's deadline."""
    if limits is None:
        return call_tool(session, tool_calls, name, arguments, task, options, always=always)
    options = limits.enter(options, session.default_timeout)
    try:
        return call_tool(session, tool_calls, name, arguments, task, options, always=always)
    finally:
        limits.leave()


def call_tool_retried(send: Callable[[CallOptions], Union[CallToolResult, Task]], tool_calls: "ToolCalls",
                      name: str, options: CallOptions, policy: _retry.Retry, idempotent: Optional[bool],
                      default_timeout: Optional[float]) -> Union[CallToolResult, Task]:
    """``send(options)`` (one call of tool ``name``) under ``policy``, as :func:`mcpsync.retry.run` decides.

    Each attempt gets the whole timeout (``options.timeout``, else ``default_timeout``); whether the tool
    may run twice is ``idempotent`` when given, else what its listed annotations say.
    """
    budget = options.timeout if options.timeout is not None else default_timeout

    def attempt(ids: Callable[[Any], None]) -> Union[CallToolResult, Task]:
        return send(options._replace(on_request_id=ids))

    def repeatable() -> bool:
        if idempotent is not None:
            return idempotent
        return tool_calls.repeatable(name, call_options(budget, options.cancel))

    return _retry.run(attempt, policy, repeatable=repeatable, timeout=budget, cancel=options.cancel, tool=name)


def tool_result(data: Any, options: CallOptions) -> CallToolResult:
    """The wire result of ``tools/call`` as a :class:`CallToolResult`, over ``options.max_output`` cut."""
    if options.max_output is not None:
        spilled = cut(data, options.max_output)
        if spilled is not None:
            return spilled
    return CallToolResult.from_dict(data)


def call_as_task(session: SessionHandle, tool_calls: "ToolCalls", params: JSONObject, task: bool,
                 options: CallOptions, *, always: bool) -> Union[CallToolResult, Task]:
    """One ``tools/call`` that may run as a task: the :class:`Task` handle (``task=True``) or the result.

    A plain call that the server (or the tool's ``taskSupport: "required"``) turns into a
    task waits for it here; that wait ends at ``options.deadline`` or, without one, when
    ``options.timeout`` (else the session's default) has passed since the request went out.
    ``always`` declares the 2026 tasks extension on the call (``Client(tasks=True)``).
    """
    name = str(params.get("name", ""))
    # Where a wait for a task ends, should the call become one (the clock starts before the request).
    deadline = options.deadline or Deadline.after(
        options.timeout if options.timeout is not None else session.default_timeout)
    created, result = tool_calls.call(name, params, task, options, always_tasks=always)
    if created is None:
        return Task.completed(session, name, result, True) if task else CallToolResult.from_dict(result)
    handle = Task(session, created, modern=session.modern, tool=name)
    # A passed deadline still leaves one last short poll.
    return handle if task else handle.result(max(deadline.remaining(), 0.001))


def parse_created(result: Any, modern: bool) -> JSONObject:
    """The task inside a CreateTaskResult (2025-11-25 nests it under ``task``; 2026 inlines it)."""
    if not isinstance(result, dict):
        raise ProtocolError("tools/call returned a non-object result")
    task = result if modern else result.get("task")
    if not isinstance(task, dict) or not isinstance(task.get("taskId"), str):
        raise ProtocolError("The server's CreateTaskResult has no task id")
    return task


class ToolCalls:
    """The tool calls of one client: header plans and task decisions over its session."""

    def __init__(self, session: Session, book: ToolBook, lists: Lists) -> None:
        self._session = session
        self._book = book
        self._lists = lists

    def call(self, name: str, params: JSONObject, task: bool, options: CallOptions, *,
             always_tasks: bool) -> Tuple[Optional[JSONObject], Any]:
        """Send ``tools/call``; returns ``(created task info, None)`` or ``(None, result)``.

        ``task`` is the caller's ``task=True``; ``always_tasks`` the client's
        ``tasks=True`` (modern: declare the extension on every call).

        Raises:
            CapabilityError: a legacy tool that cannot run as a task was asked to.
            and what :meth:`Session.call` raises.
        """
        session = self._session
        if session.modern:
            extension = TASKS_EXTENSION if task or always_tasks else None

            def send() -> Any:
                return session.call(TOOLS_CALL, params, options, extension=extension)

            result = self._book.call_with_plans(name, send, lambda: self._refresh(options)) \
                if session.header_routing else send()
            return (parse_created(result, True), None) if result_type(result) == TASK else (None, result)
        offered = offers_tool_tasks(session.server_capabilities)
        support = self._task_support(name, options) if offered else None
        if task and support not in ("optional", "required"):
            why = "the server offers no tool tasks" if not offered else f"its taskSupport is {support or 'forbidden'!r}"
            raise CapabilityError(f"Tool {name!r} of {session.name!r} cannot run as a task: {why}")
        if task or support == "required":
            params["task"] = {}
            return parse_created(session.call(TOOLS_CALL, params, options), False), None
        return None, session.call(TOOLS_CALL, params, options)

    def repeatable(self, name: str, options: CallOptions) -> bool:
        """Whether tool ``name`` is declared safe to run twice (see :meth:`Lists.repeatable`)."""
        return self._lists.repeatable(name, options)

    def _refresh(self, options: CallOptions) -> None:
        try:
            self._lists.tools(True, _timing(options))
        except CapabilityError:
            self._book.no_tools()

    def _task_support(self, name: str, options: CallOptions) -> Optional[str]:
        """A legacy (2025-11-25) tool's ``execution.taskSupport`` (listing the tools once if need be)."""
        if not self._book.knows(name):
            self._lists.tools(False, _timing(options))
        return self._book.task_support(name)


def _timing(options: CallOptions) -> CallOptions:
    """Only the timeout and deadline of ``options``: for the tool list a call needs on the way."""
    if options.timeout is None and options.deadline is None:
        return DEFAULT_OPTIONS
    return CallOptions(timeout=options.timeout, deadline=options.deadline)
