"""Every exception mcpsync raises, in one tree.

::

    MCPSyncError                     root of everything mcpsync raises
    ├── TransportError               I/O below JSON-RPC failed
    │   ├── ConnectError             could not spawn the server or reach it
    │   │   └── ServerNotConnected   a managed server is failed, closed or not started
    │   ├── TransportClosed          the connection is gone (.may_have_reached_server: could the request have run?)
    │   │   ├── ForkedError          used in a forked child: the connection belongs to the parent
    │   │   └── ConnectionLost       the connection broke with a call in flight
    │   │       ├── StreamBroken     an HTTP response stream ended before its response (also a ProtocolError)
    │   │       └── ServerUnreachable  a call's connection was refused or timed out (also a ConnectError)
    │   ├── EgressRefused            the egress gate refused to send an HTTP request (nothing was sent)
    │   │   └── CrossOriginRedirect  (also an HTTPStatusError) a redirect to another origin, not followed
    │   └── HTTPStatusError          an HTTP response had a non-2xx status
    │       ├── SessionExpired       404, or a 400 naming the session, to a request with an Mcp-Session-Id
    │       └── CrossOriginRedirect
    ├── ProtocolError                the peer broke the JSON-RPC or MCP contract
    │   ├── UnsupportedProtocolVersion  -32022 (CODE) or an initialize answer naming a version not spoken
    │   ├── StreamBroken             (see ConnectionLost)
    │   └── SkillVerificationError   a skill file or its frontmatter does not match its entry; not used
    ├── RequestTimeout               also a builtin TimeoutError
    ├── RequestCancelled             the caller's CancelToken fired
    ├── MCPError                     the peer answered with a JSON-RPC error object
    │   ├── MissingClientCapability  -32021: the server needs a capability this client did not declare
    │   ├── URLElicitationRequired   -32042: the user must first complete URL elicitations
    │   ├── ResourceNotFound         -32002 (legacy) or -32602 (2026-07-28) from resources/read
    │   └── SamplingRejected         -1: raised by a sampling handler to refuse
    ├── ToolError                    raised by CallToolResult.raise_for_error()
    ├── CapabilityError              the server did not offer what a method needs
    ├── AuthError                    OAuth authorization failed or was refused (.error: a short code)
    ├── ConfigError                  a server config is malformed (also a ValueError)
    ├── UnsafeDirectory              a directory for results or secrets is not private (also a PermissionError)
    ├── SpillError                   a result over max_output could not be written to its file (also an OSError)
    ├── UnknownServerError           no managed server has that name (also a KeyError)
    ├── UnknownSkillError            no skill (or more than one) has that name on the server (also a KeyError)
    └── UnknownToolError             no managed tool has that qualified name (also a KeyError)
        └── ToolNotAllowed           the server's config filters that tool out (enabled_tools / disabled_tools)

    SignalExit                       a SystemExit (not an MCPSyncError): a signal ended the program

Each class that stands for an MCP error code carries it as ``CODE`` (the codes are named in
:mod:`mcpsync._protocol.codes`); a test holds this drawing against the classes.

Foreign exceptions (``OSError``, JSON decode errors, ``requests`` errors) are
translated into this tree at one boundary per layer and chained with ``from``.
"""

from __future__ import annotations

import signal
from typing import Any, ClassVar, Mapping, Optional, Sequence

from ._protocol import codes

# The JSON-RPC code of an error object that names none (the engine's codes are JSON-RPC's, not MCP's:
# this module imports only the protocol's vocabulary).
_INTERNAL_ERROR = -32603

__all__ = [
    "AuthError",
    "CapabilityError",
    "ConfigError",
    "ConnectError",
    "ConnectionLost",
    "CrossOriginRedirect",
    "EgressRefused",
    "ForkedError",
    "HTTPStatusError",
    "MCPError",
    "MCPSyncError",
    "MissingClientCapability",
    "ProtocolError",
    "RequestCancelled",
    "RequestTimeout",
    "ResourceNotFound",
    "SamplingRejected",
    "ServerNotConnected",
    "ServerUnreachable",
    "SessionExpired",
    "SignalExit",
    "SkillVerificationError",
    "SpillError",
    "StreamBroken",
    "ToolError",
    "ToolNotAllowed",
    "TransportClosed",
    "TransportError",
    "URLElicitationRequired",
    "UnknownServerError",
    "UnknownSkillError",
    "UnknownToolError",
    "UnsafeDirectory",
    "UnsupportedProtocolVersion",
]


class MCPSyncError(Exception):
    """Root of every exception raised by mcpsync itself (not by the peer).

    Attributes:
        not_retried: for a call made with ``retry=``, why this failure was not sent again (say,
            the call may have run and the tool is not declared safe to repeat); None otherwise.
    """

    not_retried: Optional[str] = None


class TransportError(MCPSyncError):
    """Moving bytes to or from the server failed."""


class ConnectError(TransportError):
    """The server could not be started or reached."""


class TransportClosed(TransportError):
    """The connection is closed; pending and later calls fail with this.

    Every way a connection can end under a call in flight raises this class or a subclass
    (:class:`ConnectionLost`, :class:`StreamBroken`, :class:`ServerUnreachable`), on every
    transport and through a :class:`~mcpsync.Manager`.

    Attributes:
        returncode: the stdio server's exit status, when known.
        stderr_tail: the last lines the stdio server wrote to stderr.
        may_have_reached_server: False only when no byte of the failed request left this process
            (the connection was refused, the pipe broke before its first byte, the client was
            already closed): then sending it again cannot run it twice. True whenever the server
            may have read it, and so may have run it.
        unsent: ``not may_have_reached_server`` (the older name).
    """

    may_have_reached_server: bool = True

    def __init__(
        self,
        message: str = "Transport closed",
        *,
        returncode: Optional[int] = None,
        stderr_tail: Sequence[str] = (),
        may_have_reached_server: Optional[bool] = None,
    ) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr_tail = list(stderr_tail)
        if may_have_reached_server is not None:
            self.may_have_reached_server = may_have_reached_server

    @property
    def unsent(self) -> bool:
        return not self.may_have_reached_server

    @unsent.setter
    def unsent(self, value: bool) -> None:
        self.may_have_reached_server = not value

    def __reduce__(self) -> Any:
        return (_rebuild_closed, (type(self), str(self), self.returncode, self.stderr_tail,
                                  self.may_have_reached_server))


class ConnectionLost(TransportClosed):
    """The connection broke with a call in flight: the server died, restarted, or the network failed.

    :attr:`may_have_reached_server` says whether the call may have run: a call that may have
    reached the server is never sent again by mcpsync (a tool must not run twice); check
    for yourself (the tool's effect) before you call it again.
    """


class ServerUnreachable(ConnectionLost, ConnectError):
    """A call's connection to the server was refused or timed out: the server is down or restarting.

    Also a :class:`ConnectError`. When the request's own connection was refused,
    :attr:`may_have_reached_server` is False (nothing was sent); when the server went away
    after it took the request (resuming its response stream was refused), it is True.
    """


class ForkedError(TransportClosed):
    """A client or manager built with ``after_fork="raise"`` was used in a forked child.

    The connection it holds belongs to the parent process: the child never writes to it,
    and with ``after_fork="raise"`` it does not open one of its own either. Build a new
    client in the child (or call its ``connect()``, which opens one for this process), or
    drop ``after_fork="raise"`` to have the first use reconnect by itself.
    """

    def __reduce__(self) -> Any:
        return (type(self), (str(self),))


def _rebuild_closed(cls: "type[TransportClosed]", message: str, returncode: Optional[int], tail: Sequence[str],
                    reached: bool = True) -> TransportClosed:
    return cls(message, returncode=returncode, stderr_tail=tail, may_have_reached_server=reached)


class EgressRefused(TransportError):
    """mcpsync refused to send an HTTP request: its URL breaks a rule of the egress gate.

    Every HTTP request mcpsync sends (MCP traffic, every redirect hop, every authorization
    request) is checked on the URL about to go out; this is raised before any byte of it is
    sent. The text says which rule and what to do; it never holds a query, userinfo or a
    control character of the refused URL.

    Attributes:
        url: the refused URL (or the server that named it) in loggable form.
        rule: ``"origin"`` (MCP traffic leaves the configured origin), ``"reference"`` (a
            ``Location`` or ``endpoint`` holding a control character, whitespace, a backslash
            or userinfo), ``"address"`` (an authorization flow's address class rule),
            ``"metadata"`` (a cloud metadata address) or ``"unreadable"`` (URL parsers disagree).
    """

    def __init__(self, message: str, *, url: str = "", rule: str = "") -> None:
        super().__init__(message)
        self.url = url
        self.rule = rule

    def __reduce__(self) -> Any:
        return (_rebuild_egress, (str(self), self.url, self.rule))


def _rebuild_egress(message: str, url: str, rule: str) -> EgressRefused:
    return EgressRefused(message, url=url, rule=rule)


class HTTPStatusError(TransportError):
    """An HTTP response carried a non-2xx status.

    Attributes:
        status_code: the HTTP status.
        headers: the response headers (a plain dict).
        body: the response body as text (possibly truncated).
    """

    def __init__(self, message: str, *, status_code: int, headers: Optional[dict[str, str]] = None,
                 body: str = "") -> None:
        super().__init__(message)
        self.status_code = status_code
        self.headers = dict(headers or {})
        self.body = body

    def __reduce__(self) -> Any:
        return (_rebuild_http, (str(self), self.status_code, self.headers, self.body))


def _rebuild_http(message: str, status: int, headers: dict[str, str], body: str,
                  cls: type[HTTPStatusError] = HTTPStatusError) -> HTTPStatusError:
    return cls(message, status_code=status, headers=headers, body=body)


class SessionExpired(HTTPStatusError):
    """The server answered 404 (or a 400 whose body speaks of the session, as TypeScript-SDK servers do)
    to a request that carried its ``Mcp-Session-Id``: the session is gone, and the request was not run.

    The transport has already dropped the stale id; the client starts a new
    session (a fresh ``initialize``) and retries the request once.
    """

    def __reduce__(self) -> Any:
        return (_rebuild_http, (str(self), self.status_code, self.headers, self.body, SessionExpired))


class CrossOriginRedirect(HTTPStatusError, EgressRefused):
    """The server answered an MCP request with a redirect to another origin, which is not followed.

    The egress gate refused the hop (so this is an :class:`EgressRefused`, ``rule="origin"``,
    too); nothing of the request was sent there.

    mcpsync follows a redirect only when it stays on the scheme, host and port
    the request went to: a request carries credentials, configured headers, the
    session id and tool arguments, and none of them may reach a server the user
    did not name. To use the other server, put its URL in the configuration.

    Attributes:
        location: the redirect's target, in loggable form (no userinfo, query or fragment).
        status_code, headers, body: as for :class:`HTTPStatusError`.
    """

    def __init__(self, message: str, *, status_code: int, headers: Optional[dict[str, str]] = None,
                 body: str = "", location: str = "") -> None:
        super().__init__(message, status_code=status_code, headers=headers, body=body)
        self.location = location
        self.url = location
        self.rule = "origin"

    def __reduce__(self) -> Any:
        return (_rebuild_redirect, (str(self), self.status_code, self.headers, self.body, self.location))


def _rebuild_redirect(message: str, status: int, headers: dict[str, str], body: str,
                      location: str) -> CrossOriginRedirect:
    return CrossOriginRedirect(message, status_code=status, headers=headers, body=body, location=location)


class ProtocolError(MCPSyncError):
    """The peer sent something the JSON-RPC or MCP contract does not allow."""


class StreamBroken(ConnectionLost, ProtocolError):
    """An HTTP response stream ended before its response: a 2026-07-28 request sent once more, with a new
    id, broke again; or a legacy stream named no event to resume from (it is not sent twice).

    A :class:`ConnectionLost` (so a :class:`TransportClosed`); also a :class:`ProtocolError`, as before."""


class UnsupportedProtocolVersion(ProtocolError):
    """The server chose a protocol version this client does not speak.

    Attributes:
        offered: the version the server answered with.
        supported: the versions this client speaks.
    """

    #: The code a 2026-07-28 server refuses a version with (``data.supported`` lists its own).
    CODE: ClassVar[int] = codes.UNSUPPORTED_VERSION

    def __init__(self, offered: str, supported: Sequence[str], message: Optional[str] = None) -> None:
        super().__init__(message or (
            f"Server offered protocol version {offered!r}; "
            f"this client supports {', '.join(supported)}"
        ))
        self.offered = offered
        self.supported = list(supported)
        self._message = message

    def __reduce__(self) -> Any:
        return (UnsupportedProtocolVersion, (self.offered, self.supported, self._message))


class SkillVerificationError(ProtocolError):
    """A skill's file is not what its entry describes, so its content was not used (SEP-2640).

    Attributes:
        uri: the file that failed.
        reason: what did not match: ``"size"``, ``"digest"``, ``"frontmatter"``, ``"unlisted"`` (the file
            is not in the manifest), ``"invalid-entry"`` (an entry with no usable manifest) or
            ``"dynamic"`` (the skill publishes no manifest and unverified content was not allowed).
        expected: what the entry says (a size, a digest, a frontmatter dict), when there is one.
        actual: what was found, when there is one.

    The server may simply have changed the skill since it was listed: get the entry again
    (``client.get_skill(uri)``) before reading again.
    """

    def __init__(self, uri: str, reason: str, detail: str = "", *, expected: Any = None,
                 actual: Any = None) -> None:
        text = f"Skill file {uri!r} failed verification ({reason})"
        super().__init__(f"{text}: {detail}; its content was not used" if detail
                         else f"{text}; its content was not used")
        self.uri = uri
        self.reason = reason
        self.detail = detail
        self.expected = expected
        self.actual = actual

    def __reduce__(self) -> Any:
        return (_rebuild_skill, (self.uri, self.reason, self.detail, self.expected, self.actual))


def _rebuild_skill(uri: str, reason: str, detail: str, expected: Any, actual: Any) -> SkillVerificationError:
    return SkillVerificationError(uri, reason, detail, expected=expected, actual=actual)


class RequestTimeout(MCPSyncError, TimeoutError):
    """No response arrived within the call's timeout (a local error, not the peer's).

    The text starts ``Request timeout after <ms>ms`` (``Notify``, ``SSE response``... for
    other waits), then names the server and the method, then the hint, when there is one,
    about what the server did instead (see :meth:`after`).

    Attributes:
        method: the JSON-RPC method that timed out.
        timeout: the timeout in seconds.
        server: the server's label (its name in a config, or one made from its command or URL),
            when known.
        hint: what the transport saw that may explain the silence (say, lines on a stdio
            server's stdout that were not JSON-RPC), or "".
    """

    def __init__(self, message: str, *, method: str = "", timeout: float = 0.0, server: str = "",
                 hint: str = "") -> None:
        super().__init__(message)
        self.method = method
        self.timeout = timeout
        self.server = server
        self.hint = hint

    @classmethod
    def after(cls, timeout: float, *, method: str = "", server: str = "", hint: str = "", label: str = "Request",
              unread: bool = False) -> "RequestTimeout":
        """The timeout of ``method`` on ``server`` after ``timeout`` seconds, in the standard words.

        ``label`` names what was waited for (``"Request"``, ``"Notify"``, ``"SSE response"``);
        ``unread`` says the server did not even accept the message (a write, or a notification's
        POST, that timed out), rather than sending no answer. Built only when a timeout happens.
        """
        text = f"{label} timeout after {round(timeout * 1000)}ms"
        if server and method:
            text += (f": MCP server {server!r} did not accept {method!r} in time" if unread else f": MCP server {server!r} sent no answer to {method!r}")
        elif method:
            text += f" waiting for {method!r}"
        if hint:
            text += f". {hint}"
        return cls(text, method=method, timeout=timeout, server=server, hint=hint)

    def __reduce__(self) -> Any:
        return (_rebuild_timeout, (str(self), self.method, self.timeout, self.server, self.hint))


def _rebuild_timeout(message: str, method: str, timeout: float, server: str = "", hint: str = "") -> RequestTimeout:
    return RequestTimeout(message, method=method, timeout=timeout, server=server, hint=hint)


class RequestCancelled(MCPSyncError):
    """The caller cancelled the call: its CancelToken fired.

    Attributes:
        reason: what the canceller gave as the reason, if anything.
    """

    def __init__(self, reason: Any = None) -> None:
        text = "Request cancelled" if reason is None else f"Request cancelled: {reason}"
        super().__init__(text)
        self.reason = reason

    def __reduce__(self) -> Any:
        return (RequestCancelled, (self.reason,))


class MCPError(MCPSyncError):
    """The peer answered a request with a JSON-RPC error object.

    Attributes:
        code: the integer error code.
        message: the peer's message.
        data: the optional ``data`` member, as sent.
        http_status: the HTTP status the error came with (modern Streamable HTTP
            answers errors with 400 or 404), when it came over HTTP with one.
    """

    http_status: Optional[int] = None
    #: The error code this class stands for (None: any code without a class of its own).
    CODE: ClassVar[Optional[int]] = None

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        # TypeScript-SDK servers put their own "MCP error <code>: " in the message: say it once
        prefix = f"MCP error {code}: "
        super().__init__(message if message.startswith(prefix) else prefix + message)
        self.code = code
        self.message = message
        self.data = data

    def __reduce__(self) -> Any:
        return (type(self), (self.code, self.message, self.data))

    @classmethod
    def from_wire(cls, error: Mapping[str, Any], *, http_status: Optional[int] = None) -> "MCPError":
        """The exception for a JSON-RPC error object as it came off the wire.

        A missing or non-integer ``code`` becomes ``-32603`` (internal error) and a
        missing ``message`` the empty string; ``http_status`` is the status the
        error came with over HTTP, if any.
        """
        code = error.get("code")
        found = cls(code if type(code) is int else _INTERNAL_ERROR, str(error.get("message", "")), error.get("data"))
        found.http_status = http_status
        return found

    def to_dict(self) -> dict[str, Any]:
        """The JSON-RPC error object."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class MissingClientCapability(MCPError):
    """The server needs a client capability this request did not declare (``-32021``).

    Attributes:
        required_capabilities: what the server asked for (``data.requiredCapabilities``).
    """

    CODE: ClassVar[int] = codes.MISSING_CAPABILITY

    @property
    def required_capabilities(self) -> dict[str, Any]:
        data = self.data if isinstance(self.data, dict) else {}
        required = data.get("requiredCapabilities")
        return dict(required) if isinstance(required, dict) else {}

    def __str__(self) -> str:
        needed = ", ".join(_capability_names(self.required_capabilities)) or "unknown"
        return f"MCP error {self.code}: {self.message} (required client capabilities: {needed})"


def _capability_names(capabilities: dict[str, Any], prefix: str = "") -> list[str]:
    names: list[str] = []
    for key, value in capabilities.items():
        if isinstance(value, dict) and value and key == "extensions":
            names.extend(str(name) for name in value)
        elif isinstance(value, dict) and value:
            names.extend(_capability_names(value, f"{prefix}{key}."))
        else:
            names.append(f"{prefix}{key}")
    return names


class URLElicitationRequired(MCPError):
    """The server needs the user to complete URL-mode elicitations first (``-32042``, 2025-11-25).

    Show each elicitation's URL to the user (the client never opens or fetches
    it), then retry the call once they are done.

    Attributes:
        elicitations: the URL-mode elicitations, as :class:`~mcpsync.ElicitParams`
            (parsed from ``data.elicitations`` by whoever raises this; empty when
            built without them).
    """

    CODE: ClassVar[int] = codes.URL_ELICITATION_REQUIRED

    def __init__(self, code: int, message: str, data: Any = None, *, elicitations: Sequence[Any] = ()) -> None:
        super().__init__(code, message, data)
        self.elicitations = list(elicitations)

    def __reduce__(self) -> Any:
        return (_rebuild_elicitation, (self.code, self.message, self.data, self.elicitations))


def _rebuild_elicitation(code: int, message: str, data: Any, elicitations: Sequence[Any]) -> URLElicitationRequired:
    return URLElicitationRequired(code, message, data, elicitations=elicitations)


class ResourceNotFound(MCPError):
    """``resources/read`` named a resource the server does not have.

    Servers say so with ``-32002`` (the legacy code, its ``CODE``) or ``-32602`` (modern servers, and TypeScript-SDK
    servers of every era); both become this, over every transport.
    """

    CODE: ClassVar[int] = codes.RESOURCE_NOT_FOUND


class SamplingRejected(MCPError):
    """Raise it from a sampling handler to refuse the request; the server is answered with code ``-1``.

    ::

        def sampling(params):
            if not ask_user(params):
                raise mcpsync.SamplingRejected("The user declined")
    """

    CODE: ClassVar[int] = codes.USER_REJECTED

    def __init__(self, message: str = "User rejected sampling request") -> None:
        super().__init__(codes.USER_REJECTED, message)

    def __reduce__(self) -> Any:
        return (SamplingRejected, (self.message,))


class SpillError(MCPSyncError, OSError):
    """A result over ``max_output`` could not be written to its spill file; ``.result`` is the whole of it.

    Also an ``OSError`` (the one the write raised is its ``__cause__``). The tool ran: nothing
    of its answer is lost, only the cut did not happen.

    Attributes:
        result: the whole :class:`~mcpsync.CallToolResult`, uncut.
    """

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


class ToolError(MCPSyncError):
    """A tool call returned ``isError: true`` and the caller asked to raise.

    Attributes:
        result: the CallToolResult that carried the error.
    """

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.result = result

    def __reduce__(self) -> Any:
        return (ToolError, (str(self), self.result))


class CapabilityError(MCPSyncError):
    """The server did not declare the capability a method needs; nothing was sent."""


class AuthError(MCPSyncError):
    """OAuth authorization failed, was refused, or could not be done safely; the text says why.

    The text never holds a token, an authorization code or a secret.

    Attributes:
        error: a short code: the OAuth error the authorization server sent
            (``"access_denied"``, ``"invalid_grant"``, ...) or mcpsync's own
            (``"resource_mismatch"``, ``"issuer_mismatch"``, ``"pkce_unsupported"``,
            ``"insufficient_scope"``, ``"login_timeout"``, ``"discovery_failed"``,
            ``"issuer_not_allowed"`` (not the pinned or bound authorization server),
            ``"unsafe_url"`` (a URL the flow may not fetch), ``"refresh_unavailable"``
            (a refresh failed but the stored grant was kept), ``"token_store"``, ...).
    """

    def __init__(self, message: str, *, error: str = "auth_error") -> None:
        super().__init__(message)
        self.error = error

    def __reduce__(self) -> Any:
        return (_rebuild_auth, (str(self), self.error))


def _rebuild_auth(message: str, error: str) -> AuthError:
    return AuthError(message, error=error)


class ServerNotConnected(ConnectError):
    """A managed server cannot take calls: it failed, was closed, or was never started.

    The text is ``MCP server not connected: <name>``, then the reason in
    parentheses when there is one, then ``; last error: ...`` when the server
    had one (that error is also chained as ``__cause__`` where it is known).

    Attributes:
        server: the server's name.
        last_error: the text of the server's last error, if any.
        reason: why no connection is expected (``"closed"``, ...), if known.
    """

    def __init__(self, server: str, last_error: Optional[str] = None, reason: Optional[str] = None) -> None:
        text = f"MCP server not connected: {server}"
        if reason:
            text += f" ({reason})"
        if last_error:
            text += f"; last error: {last_error}"
        super().__init__(text)
        self.server = server
        self.last_error = last_error
        self.reason = reason

    def __reduce__(self) -> Any:
        return (ServerNotConnected, (self.server, self.last_error, self.reason))


class ConfigError(MCPSyncError, ValueError):
    """A server config (or a config file) is malformed; the text says where and why.

    Attributes:
        server: the server's name, when one server is at fault.
        path: the config file, when known.
    """

    def __init__(self, message: str, *, server: Optional[str] = None, path: Optional[str] = None) -> None:
        super().__init__(message)
        self.server = server
        self.path = path

    def __reduce__(self) -> Any:
        return (_rebuild_config, (str(self), self.server, self.path))


def _rebuild_config(message: str, server: Optional[str], path: Optional[str]) -> ConfigError:
    return ConfigError(message, server=server, path=path)


class UnsafeDirectory(MCPSyncError, PermissionError):
    """A directory mcpsync would write results or secrets into is not private: a symlink, not a
    directory, owned by another user, or open to others (see ``mcpsync/_private.py``).

    Attributes:
        path: the directory.
        problem: what is wrong with it ("is a symbolic link (to /x)").
    """

    def __init__(self, path: str, what: str, problem: str, remedy: str) -> None:
        super().__init__(f"{what[:1].upper()}{what[1:]} {path} {problem}: mcpsync writes results or secrets "
                         f"there, so it must be a private directory of yours; {remedy}")
        self.path = path
        self.what = what
        self.problem = problem
        self.remedy = remedy

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> Any:
        return (UnsafeDirectory, (self.path, self.what, self.problem, self.remedy))


class _LookupError(MCPSyncError, KeyError):
    """A KeyError whose text is its message (KeyError would show the repr)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownServerError(_LookupError):
    """No server of that name is configured in the manager.

    Attributes:
        name: the name asked for.
    """

    def __init__(self, name: str, known: Sequence[str] = ()) -> None:
        hint = f"; configured: {', '.join(known)}" if known else "; no servers are configured"
        super().__init__(name, f"Unknown MCP server {name!r}{hint}")
        self.known = list(known)

    def __reduce__(self) -> Any:
        return (UnknownServerError, (self.name, self.known))


class UnknownSkillError(_LookupError):
    """No skill in the server's listing has that name, or several do (skill names are labels, not ids).

    Attributes:
        name: the name asked for.
        matches: the URIs of the skills that have it (two or more: pass one of them instead).
    """

    def __init__(self, name: str, server: str = "", matches: Sequence[str] = ()) -> None:
        where = f" on server {server!r}" if server else ""
        if matches:
            text = f"Skill name {name!r} is ambiguous{where}: {', '.join(matches)}; pass one of these URIs"
        elif "://" in name:
            text = f"No skill is served at {name!r}{where}"
        else:
            text = f"No skill named {name!r} is listed{where} (pass its SKILL.md URI if it is not listed)"
        super().__init__(name, text)
        self.server = server
        self.matches = list(matches)

    def __reduce__(self) -> Any:
        return (UnknownSkillError, (self.name, self.server, self.matches))


class UnknownToolError(_LookupError):
    """No managed tool has that qualified name (it may have gone in a refresh).

    Attributes:
        name: the qualified name asked for.
    """

    def __init__(self, name: str) -> None:
        super().__init__(name, f"Unknown MCP tool {name!r} (see Manager.tools() for the current names)")

    def __reduce__(self) -> Any:
        return (UnknownToolError, (self.name,))


class ToolNotAllowed(UnknownToolError):
    """A tool the server's config filters out (``enabled_tools`` / ``disabled_tools``).

    The manager neither lists nor calls it; the text names the rule and the file to change.

    Attributes:
        name: the name asked for (the qualified name, or the tool's own name).
        server: the server's name.
        tool: the tool's own name on its server.
        rule: which key hides it (``'not in enabled_tools ["read_*"]'``, ``'disabled_tools "write_*"'``).
    """

    def __init__(self, name: str, server: str, tool: str, rule: str, source: str = "") -> None:
        where = f" in {source}" if source and source != "<dict>" else ""
        text = f"MCP tool {tool!r} of server {server!r} is not allowed: {rule}{where} (change that key to offer it)"
        super(UnknownToolError, self).__init__(name, text)  # UnknownToolError's own text is not this one's
        self.server = server
        self.tool = tool
        self.rule = rule
        self.source = source

    def __reduce__(self) -> Any:
        return (ToolNotAllowed, (self.name, self.server, self.tool, self.rule, self.source))


class SignalExit(SystemExit):
    """Raised in the main thread by the handler :func:`install_signal_handlers` installs.

    A ``SystemExit`` whose ``code`` is 128 plus the signal's number (143 for SIGTERM, 129
    for SIGHUP), the status a shell reports for a process ended by that signal; ``signum``
    is the signal. Like any ``SystemExit`` it is not caught by ``except Exception``.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum

    @property
    def signal_name(self) -> str:
        """The signal's name, such as ``"SIGTERM"``."""
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"
