"""FakeServer: an in-process MCP server, declared with plain functions, that records what it is asked.

This module is the face tests use and the one place the parts meet: the
:class:`FakeServer` owns a :class:`~mcpsync.testing._side.ServerSide`
(settings, declarations, recorder) and the
:class:`~mcpsync.testing._hub.Hub` of its connections, hands those down to
the transports it makes, and delegates its recording, waiting and asserting
methods to the recorder. Nothing below imports this module, not even for a type checker: the two
public classes that name the ``FakeServer`` in their annotations live here too, :class:`FakeTransport`
(built from a server) and :class:`Context` (whose ``server`` is one), the latter handed down to the
connections through the server's side.

Thread safety: every method may be called from any thread. The ``wait_for_*``
methods block until their record arrives or the timeout passes;
:meth:`FakeServer.client` blocks for the client's handshake;
:meth:`FakeServer.close` joins the connections' threads;
:meth:`FakeServer.run_stdio` blocks until stdin ends.
"""

from __future__ import annotations

import copy
import os
import threading
from typing import (
    TYPE_CHECKING, Any, Callable, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union, cast, overload,
)

from .._rpc.engine import DEFAULT_TIMEOUT
from .._rpc.jsonrpc import JSONObject
from ..skills import Skill
from ..transports.memory import MemoryTransport
from . import _context
from ._connection import Connection
from ._hub import Hub, hub_of, register
from ._protocol import choose_versions
from ._recorder import Fault, RecordedNotification, RecordedRequest
from ._registry import Completer, PromptDef, ResourceDef, TemplateDef, ToolDef
from ._side import ServerSide, Settings
from ._skills import FileContent, SkillDef
from ._stdio import serve_stdio

if TYPE_CHECKING:
    from ..client import Client

__all__ = ["Context", "FakeServer", "FakeTransport", "RecordedNotification", "RecordedRequest"]

F = TypeVar("F", bound=Callable[..., Any])


class FakeServer:
    """An MCP server in your test process: tools, resources and prompts are plain functions.

    ::

        server = FakeServer("weather")

        @server.tool()
        def forecast(city: str, days: int = 1) -> str:
            \"\"\"The forecast for a city.\"\"\"
            return f"sunny in {city}"

        with server, server.client() as client:
            assert client.call_tool("forecast", {"city": "Oslo"}).text == "sunny in Oslo"
        assert server.calls("forecast") == [{"city": "Oslo"}]

    It speaks both protocol eras, choosing per request as a real dual-era
    server does: the ``initialize`` handshake (2024-11-05 to 2025-11-25) and
    the handshake-free 2026-07-28 protocol (``server/discover``, ``_meta`` on
    every request). :meth:`client` connects an :class:`mcpsync.Client` in
    memory; :meth:`run_stdio` serves stdin and stdout, for a test that needs a
    real process.

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        title: ``serverInfo.title``.
        instructions: the ``instructions`` the server gives.
        versions: the protocol versions it speaks (default: all five). Leave
            out ``"2026-07-28"`` for a legacy-only server, or every legacy
            version for a modern-only one.
        capabilities: the server capabilities to advertise, instead of those
            derived from what is declared (tools, resources, prompts, plus
            logging and completions).
        page_size: split ``*/list`` results into pages of this many items.
        request_timeout: how long ``ctx.sample``/``elicit``/``list_roots``
            wait for a legacy client's answer, in seconds.
        input_timeout: how long a 2026-07-28 run waits for the client to retry
            with the input it asked for, in seconds.
        ttl_ms: the ``ttlMs`` cache hint on 2026-07-28 results.

    Thread safety: declare, inspect and script from any thread; every
    connection is served on threads of its own.
    """

    def __init__(self, name: str = "fake-server", *, version: str = "1.0.0", title: Optional[str] = None,
                 instructions: Optional[str] = None, versions: Optional[Sequence[str]] = None,
                 capabilities: Optional[Mapping[str, Any]] = None, page_size: Optional[int] = None,
                 request_timeout: float = 30.0, input_timeout: float = 30.0, ttl_ms: int = 0) -> None:
        legacy_versions, modern_versions = choose_versions(versions)
        self._settings = Settings(
            name=name, version=version, title=title, instructions=instructions, legacy_versions=legacy_versions,
            modern_versions=modern_versions, page_size=page_size, request_timeout=request_timeout,
            input_timeout=input_timeout, ttl_ms=ttl_ms,
            capabilities=copy.deepcopy(dict(capabilities)) if capabilities is not None else None)
        self._side = ServerSide(self._settings, owner=self, context=Context)
        self._registry = self._side.registry
        self._recorder = self._side.recorder
        self._hub = Hub(self._side)
        register(self, self._hub)  # so that FakeTransport(server) finds the hub
        self._lock = threading.Lock()  # guards the two lists below
        self._clients: List["Client"] = []
        self._transports: List[FakeTransport] = []

    def __repr__(self) -> str:
        return f"<FakeServer {self.name!r} tools={self._registry.tool_names()}>"

    def __enter__(self) -> "FakeServer":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- settings (the constructor's arguments) --------------------------------------------------

    @property
    def name(self) -> str:
        """``serverInfo.name``."""
        return self._settings.name

    @name.setter
    def name(self, value: str) -> None:
        self._settings.name = value

    @property
    def version(self) -> str:
        """``serverInfo.version``."""
        return self._settings.version

    @version.setter
    def version(self, value: str) -> None:
        self._settings.version = value

    @property
    def title(self) -> Optional[str]:
        """``serverInfo.title``."""
        return self._settings.title

    @title.setter
    def title(self, value: Optional[str]) -> None:
        self._settings.title = value

    @property
    def instructions(self) -> Optional[str]:
        """The ``instructions`` the server gives."""
        return self._settings.instructions

    @instructions.setter
    def instructions(self, value: Optional[str]) -> None:
        self._settings.instructions = value

    @property
    def legacy_versions(self) -> Tuple[str, ...]:
        """The ``initialize``-handshake versions it speaks, oldest first."""
        return self._settings.legacy_versions

    @legacy_versions.setter
    def legacy_versions(self, value: Tuple[str, ...]) -> None:
        self._settings.legacy_versions = value

    @property
    def modern_versions(self) -> Tuple[str, ...]:
        """The 2026-07-28-era versions it speaks, oldest first."""
        return self._settings.modern_versions

    @modern_versions.setter
    def modern_versions(self, value: Tuple[str, ...]) -> None:
        self._settings.modern_versions = value

    @property
    def page_size(self) -> Optional[int]:
        """Split ``*/list`` results into pages of this many items (None: one page)."""
        return self._settings.page_size

    @page_size.setter
    def page_size(self, value: Optional[int]) -> None:
        self._settings.page_size = value

    @property
    def request_timeout(self) -> float:
        """Seconds ``ctx.sample``/``elicit``/``list_roots`` wait for a legacy client."""
        return self._settings.request_timeout

    @request_timeout.setter
    def request_timeout(self, value: float) -> None:
        self._settings.request_timeout = value

    @property
    def input_timeout(self) -> float:
        """Seconds a 2026-07-28 run waits for the client's retry with the input."""
        return self._settings.input_timeout

    @input_timeout.setter
    def input_timeout(self, value: float) -> None:
        self._settings.input_timeout = value

    @property
    def ttl_ms(self) -> int:
        """The ``ttlMs`` cache hint on 2026-07-28 results."""
        return self._settings.ttl_ms

    @ttl_ms.setter
    def ttl_ms(self, value: int) -> None:
        self._settings.ttl_ms = value

    @classmethod
    def from_cassette(cls, path: Union[str, "os.PathLike[str]"], *, connection: int = 0,
                      **options: Any) -> "FakeServer":
        """A fake server declaring the tools and resources a cassette recorded, answering as recorded.

        ``connection`` picks a recorded connection (numbered from 0); ``options`` are the
        constructor's. A tool call or read the cassette lacks returns an error result.

        Raises:
            CassetteError: the cassette is unreadable, or has no such connection.
        """
        from ._from_cassette import load_cassette

        return load_cassette(cls(**options), os.fspath(path), connection)

    # -- declaring ---------------------------------------------------------------------------

    @overload
    def tool(self, fn: F) -> F: ...

    @overload
    def tool(self, *, name: Optional[str] = None, description: Optional[str] = None,
             input_schema: Optional[Mapping[str, Any]] = None, output_schema: Optional[Mapping[str, Any]] = None,
             title: Optional[str] = None, annotations: Optional[Mapping[str, Any]] = None,
             meta: Optional[Mapping[str, Any]] = None) -> Callable[[F], F]: ...

    def tool(self, fn: Optional[F] = None, **options: Any) -> Union[F, Callable[[F], F]]:
        """Declare a tool (a decorator, with or without arguments).

        The input schema comes from the signature unless ``input_schema`` is
        given; the description is the docstring's first paragraph unless
        ``description`` is given. What the function returns becomes the result:
        ``str`` is text, a dict is ``structuredContent`` (and its JSON as text),
        content objects or blocks are the content, a
        :class:`~mcpsync.CallToolResult` is used as is. Raising
        :class:`~mcpsync.MCPError` answers with that JSON-RPC error; raising
        anything else returns an ``isError`` result with the exception's text.
        """
        if fn is not None:
            self.add_tool(fn, **options)
            return fn

        def decorate(function: F) -> F:
            self.add_tool(function, **options)
            return function

        return decorate

    def add_tool(self, fn: Callable[..., Any], **options: Any) -> None:
        """Declare ``fn`` as a tool (the options of :meth:`tool`); replaces a tool of that name."""
        self._registry.add_tool(ToolDef.build(fn, **options))
        self._list_changed("tools")

    def remove_tool(self, name: str) -> None:
        """Withdraw a tool; connected clients get ``notifications/tools/list_changed`` (see :meth:`notify`)."""
        self._registry.remove_tool(name)
        self._list_changed("tools")

    def resource(self, uri: str, *, name: Optional[str] = None, description: Optional[str] = None,
                 mime_type: Optional[str] = None, title: Optional[str] = None) -> Callable[[F], F]:
        """Declare the resource at ``uri``; the function returns ``str`` (text), ``bytes`` (blob) or JSON."""

        def decorate(function: F) -> F:
            self._registry.add_resource(ResourceDef.build(uri, function, name=name, description=description,
                                                          mime_type=mime_type, title=title))
            self._list_changed("resources")
            return function

        return decorate

    def resource_template(self, uri_template: str, *, name: Optional[str] = None,
                          description: Optional[str] = None, mime_type: Optional[str] = None,
                          title: Optional[str] = None) -> Callable[[F], F]:
        """Declare resources matching ``uri_template``; the function takes its ``{variables}``."""

        def decorate(function: F) -> F:
            self._registry.add_template(TemplateDef.build(uri_template, function, name=name,
                                                          description=description, mime_type=mime_type,
                                                          title=title))
            self._list_changed("resources")
            return function

        return decorate

    @overload
    def prompt(self, fn: F) -> F: ...

    @overload
    def prompt(self, *, name: Optional[str] = None, description: Optional[str] = None,
               title: Optional[str] = None) -> Callable[[F], F]: ...

    def prompt(self, fn: Optional[F] = None, **options: Any) -> Union[F, Callable[[F], F]]:
        """Declare a prompt; its parameters are the prompt's (string) arguments.

        The function returns a string (one user message) or a list of strings,
        ``(role, text)`` pairs or ``{"role", "content"}`` dicts.
        """

        def decorate(function: F) -> F:
            self._registry.add_prompt(PromptDef.build(function, **options))
            self._list_changed("prompts")
            return function

        return decorate(fn) if fn is not None else decorate

    def completion(self, ref: str) -> Callable[[Completer], Completer]:
        """Declare ``fn(argument, value) -> values`` completing a prompt's or template's arguments.

        ``ref`` is the prompt name or the resource template.
        """

        def decorate(function: Completer) -> Completer:
            self._registry.add_completer(ref, function)
            return function

        return decorate

    def skill(self, name: str, description: str, body: str = "", *,
              files: Optional[Mapping[str, FileContent]] = None, frontmatter: Optional[Mapping[str, Any]] = None,
              path: Optional[str] = None, dynamic: bool = False) -> Skill:
        """Serve a skill (the ``io.modelcontextprotocol/skills`` extension); returns its entry.

        Its ``SKILL.md`` (``skill://<path>/SKILL.md``, ``path`` defaulting to ``name``) is the
        frontmatter (``name``, ``description``, then ``frontmatter``'s fields) and ``body``;
        ``files`` maps paths inside the skill to content (``str`` served as text, ``bytes`` as
        a blob). The manifest's sizes and digests are those of what is served, so a client's
        checks pass; ``dynamic`` lists no manifest. The same ``path`` again replaces the skill.

        Raises:
            ValueError: a path climbing out, a file named ``SKILL.md``, frontmatter YAML cannot carry exactly.
        """
        made = SkillDef.build(name, description, body, files=files, frontmatter=frontmatter, path=path, dynamic=dynamic)
        self._registry.add_skill(made)
        return Skill.from_dict(made.entry())

    def remove_skill(self, skill: Union[Skill, str]) -> None:
        """Stop serving a skill (its entry, ``SKILL.md`` URI or name); ``skills/get`` then answers ``-32602``."""
        self._registry.remove_skill(skill.uri if isinstance(skill, Skill) else skill)

    def tamper_skill_file(self, skill: Union[Skill, str], path: str, content: FileContent) -> None:
        """Serve ``content`` for a skill's file (``"SKILL.md"``, ``"references/GUIDE.md"``), keeping its manifest.

        As if the file changed after it was listed, or was tampered with: a client's read of it
        fails verification. Declaring the skill again serves it whole.

        Raises:
            KeyError: no such skill, or no such file in it.
        """
        definition = self._registry.skill(skill.uri if isinstance(skill, Skill) else skill)
        if definition is None:
            raise KeyError(f"FakeServer {self.name!r} serves no skill {skill!r}")
        self._registry.replace_skill(definition, definition.tampered(path, content))

    # -- what the connections read -----------------------------------------------------------

    def server_info(self) -> JSONObject:
        """The ``serverInfo`` it gives (``name``, ``version`` and ``title``)."""
        return self._settings.server_info()

    def capabilities(self, era: str = "legacy") -> JSONObject:
        """The capabilities advertised to a client of ``era`` (``"legacy"`` or ``"modern"``)."""
        return self._side.capabilities(era)

    # -- connecting ----------------------------------------------------------------------------

    def transport(self, *, name: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT) -> FakeTransport:
        """An unopened in-memory transport to this server (for :func:`mcpsync.connect` or a ``Client``)."""
        transport = FakeTransport(self, name=name or self.name, timeout=timeout)
        with self._lock:
            self._transports.append(transport)
        return transport

    def client(self, **options: Any) -> "Client":
        """A connected :class:`mcpsync.Client` over an in-memory transport.

        ``options`` are the client's (``roots``, ``sampling_handler``,
        ``elicitation_handler``, ``logging_handler``, ``client_info``,
        ``timeout``) plus ``name``. The client is closed by :meth:`close` if
        you have not closed it yourself.
        """
        from ..client import Client  # testing sits above the client; importing it here keeps the package light

        if self._hub.closed:
            raise RuntimeError(f"FakeServer {self.name!r} is closed")
        client = Client(self.transport(name=options.pop("name", None)), **options)
        with self._lock:
            self._clients.append(client)
        return client.connect()

    def run_stdio(self) -> None:
        """Serve one client on stdin and stdout (newline-delimited JSON) until stdin ends.

        For a script run as a subprocess::

            if __name__ == "__main__":
                server.run_stdio()

        While it runs, ``print`` goes to stderr so it cannot corrupt the
        protocol stream. A scripted crash (:meth:`crash_at`) ends the process
        with its exit code.
        """
        serve_stdio(self._hub)

    def close(self) -> None:
        """Close the clients, transports and connections made here, joining their threads (idempotent;
        running requests are cancelled: ``ctx.cancelled``)."""
        connections = self._hub.shut()
        with self._lock:
            clients, self._clients = self._clients, []
            transports, self._transports = self._transports, []
        for client in clients:
            client.close()
        for transport in transports:
            transport.close()
        for connection in connections:
            connection.close("the server closed")

    # -- recording (kept by the recorder) ------------------------------------------------------

    @property
    def requests(self) -> List[RecordedRequest]:
        """Every request received, in order (a copy)."""
        return self._recorder.requests

    @property
    def notifications(self) -> List[RecordedNotification]:
        """Every notification the clients sent, in order (a copy)."""
        return self._recorder.notifications

    def calls(self, tool: str, *, include_refused: bool = False) -> List[JSONObject]:
        """The arguments of each call that ran ``tool``, in order (a 2026-07-28 retry is not a new call).

        A call answered before the tool ran (an unknown tool, arguments the input schema refused) is left
        out; it stays in :attr:`requests`, its ``.refused`` saying why (``include_refused=True`` keeps it).
        """
        return self._recorder.calls(tool, include_refused=include_refused)

    def reset(self) -> None:
        """Forget the recorded requests and notifications (declarations and faults stay)."""
        self._recorder.reset()

    def wait_for_request(self, method: str, *, tool: Optional[str] = None, count: int = 1,
                         timeout: float = 5.0) -> RecordedRequest:
        """Block until ``count`` matching requests have arrived; return the ``count``-th.

        Raises:
            AssertionError: they did not arrive within ``timeout`` seconds.
        """
        return self._recorder.wait_for_request(method, tool=tool, count=count, timeout=timeout)

    def wait_for_notification(self, method: str, *, count: int = 1,
                              timeout: float = 5.0) -> RecordedNotification:
        """Block until ``count`` notifications ``method`` have arrived; return the ``count``-th.

        Raises:
            AssertionError: they did not arrive within ``timeout`` seconds.
        """
        return self._recorder.wait_for_notification(method, count=count, timeout=timeout)

    def assert_tool_called(self, name: str, /, **arguments: Any) -> None:
        """Assert ``name`` ran, with ``arguments`` among its arguments if any are given (as :meth:`calls` counts)."""
        self._recorder.assert_tool_called(name, **arguments)

    def assert_tool_not_called(self, name: str) -> None:
        """Assert ``name`` never ran; a call refused before it ran (say, by the input schema) passes."""
        self._recorder.assert_tool_not_called(name)

    # -- unhappy paths ------------------------------------------------------------------------

    def crash_at(self, n: int, *, method: Optional[str] = None, tool: Optional[str] = None,
                 exit_code: int = 1) -> None:
        """Drop the connection when the ``n``-th matching request (from now) arrives, unanswered.

        Matching: any request, or only ``method``, or only calls of ``tool``.
        In memory the client sees its transport closed; under
        :meth:`run_stdio` the process exits with ``exit_code``.
        """
        self._recorder.add_fault(Fault("crash", n, method, tool, exit_code=exit_code))

    def hang_at(self, n: int, *, method: Optional[str] = None, tool: Optional[str] = None) -> None:
        """Never answer the ``n``-th matching request (from now); matching as in :meth:`crash_at`."""
        self._recorder.add_fault(Fault("hang", n, method, tool))

    def error_at(self, n: int, code: int, message: str, *, data: Any = None, method: Optional[str] = None,
                 tool: Optional[str] = None) -> None:
        """Answer the ``n``-th matching request (from now) with a JSON-RPC error."""
        self._recorder.add_fault(Fault("error", n, method, tool, code=code, message=message, data=data))

    def crash(self, reason: Optional[str] = None) -> None:
        """Drop every live connection now, as if the server died."""
        self._hub.crash(reason or f"FakeServer {self.name!r} crashed")

    # -- telling the clients -------------------------------------------------------------------

    def notify(self, method: str, params: Optional[JSONObject] = None) -> int:
        """Send a notification to the clients; returns how many got it. Legacy sessions get any; 2026-07-28
        clients get ``list_changed`` and ``resources/updated`` on the ``subscriptions/listen`` streams asking
        for them (see docs/testing.md). What each client sent before is served first."""
        return self._hub.notify(method, params)

    def resource_updated(self, uri: str) -> int:
        """Send ``notifications/resources/updated`` to the clients subscribed to ``uri`` (either era); how many."""
        return self._hub.resource_updated(uri)

    def _list_changed(self, kind: str) -> None:
        self.notify(f"notifications/{kind}/list_changed")


class Context(_context.Context):
    """What a fake function can do while it serves a request.

    A tool, resource or prompt function gets one when it has a parameter named
    ``ctx`` (or annotated ``Context``)::

        @server.tool()
        def deploy(ctx: Context, target: str) -> str:
            ctx.progress(1, 3, "building")
            if ctx.elicit("Deploy?", {"type": "object", "properties": {}})["action"] != "accept":
                return "not deployed"
            ctx.progress(3, 3, "done")
            return f"deployed {target}"

    Over a legacy connection (``initialize`` handshake) :meth:`sample`,
    :meth:`elicit` and :meth:`list_roots` are requests from server to client.
    Under 2026-07-28 they become an ``input_required`` result: the function
    stays blocked while the client gathers the input and retries the request,
    then carries on and answers the retry.

    Thread safety: each run has its own context, used from the thread that runs
    the function.
    """

    @property
    def server(self) -> FakeServer:
        """The server this request came to."""
        return cast(FakeServer, super().server)


class FakeTransport(MemoryTransport):
    """A :class:`~mcpsync.MemoryTransport` whose peer is a :class:`~mcpsync.testing.FakeServer`.

    Opening it opens a connection on the server's :class:`~mcpsync.testing._hub.Hub`; what the
    client writes is queued for that connection's threads (it never blocks the writer), and the
    server's answers are fed back as the client's input. Closing either end closes the other:
    closing the transport closes the connection and joins its threads; a connection that drops
    (a scripted crash) disconnects the transport.

    A client finds the era over it as over stdio: the ``server/discover`` probe first.
    """

    kind = "fake"
    # A FakeServer is a real dual-era server, not a scripted peer: connect to it as to a stdio server
    # (the server/discover probe, then the handshake if refused), so that client() and run_stdio()
    # settle the same version. No era cache: the cache keys only stdio and HTTP servers.

    def __init__(self, server: FakeServer, *, name: str, timeout: Optional[float] = DEFAULT_TIMEOUT) -> None:
        super().__init__(self._to_server, name=name, timeout=timeout)
        self.server = server
        self._hub = hub_of(server)
        self._connection: Optional[Connection] = None

    def _open(self) -> None:
        self._connection = self._hub.open(self.feed, self._dropped)

    def _to_server(self, _transport: MemoryTransport, message: JSONObject) -> None:
        connection = self._connection
        if connection is not None:
            connection.receive(message)

    def _dropped(self, reason: str, _exit_code: int) -> None:
        self.disconnect(reason)

    def _shutdown(self, cause: Optional[BaseException]) -> None:
        connection = self._connection
        super()._shutdown(cause)
        if connection is not None:
            connection.close("the client closed the connection" if cause is None else f"connection lost: {cause}")
