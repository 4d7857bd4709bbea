"""The one place a target or a server config becomes a transport.

``mcpsync.connect(target, **options)`` takes a target: an argv list (stdio), an ``http(s)://``
URL (Streamable HTTP, with its legacy HTTP+SSE fallback), a server config dict, or a ready
:class:`~mcpsync.transports.Transport`; :func:`transport_for` turns it into a transport and
splits the keyword options into the transport's and the client's. :func:`create_transport`
turns a config dict (``mcpServers`` style, or :meth:`ServerConfig.transport_config`) into one.

Which options a transport takes is read from its constructor (:func:`options_of`): nobody lists
them by hand. Which config keys it takes from a dict is the tuple each transport class declares
(``config_keys``); ``timeout`` in a config is milliseconds and becomes seconds here. The type
names a config may use are :mod:`mcpsync._protocol.transports`' (config reads them too).

Pure construction: no thread is started and nothing is opened here (the client's
``connect()`` opens the transport). Raises :class:`~mcpsync.ConfigError` (a ``ValueError``)
for a target or options that do not fit together; its text names the forms accepted and,
for the usual slips (a command line as one string, a URL without ``http://``), the fix.
Messages never quote a config's values, a URL's query, or the arguments past a command's
first two words: they may hold secrets.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Mapping, Optional, Sequence, Set, Tuple, Type, Union

from .._log import getLogger
from .._protocol.transports import HTTP, SSE, STDIO, TYPE_NAMES
from ..exceptions import ConfigError, HTTPStatusError, SessionExpired
from ._seam import hand_over
from ._urls import display_url
from .base import Transport
from .stdio import StdioTransport

if TYPE_CHECKING:
    from .sse import SSETransport
    from .streamable_http import StreamableHTTPTransport

__all__ = ["TRANSPORT_OPTIONS", "Target", "config_type", "create_transport", "fallback_for", "options_of", "transport_for"]

log = getLogger("mcpsync.transport.http")

Target = Union[str, Sequence[str], Mapping[str, Any], Transport]



def classes() -> Dict[str, Type[Transport]]:
    """A config's type (after :data:`~mcpsync._protocol.transports.TYPE_NAMES`) -> the transport class.

    The HTTP transports load here, on first use, not with ``import mcpsync``: a script that only
    starts a stdio server never loads them (nor ``requests``' helpers, the egress gate, SSE).
    """
    from .sse import SSETransport
    from .streamable_http import StreamableHTTPTransport

    return {STDIO: StdioTransport, HTTP: StreamableHTTPTransport, SSE: SSETransport}


_CO_VARKEYWORDS = 0x08  # code flag of a function taking **kwargs (inspect.CO_VARKEYWORDS)


def options_of(cls: type) -> FrozenSet[str]:
    """The keyword options ``cls``'s constructor takes, following ``**options`` up to its bases.

    Read from the constructors' code objects, not with ``inspect`` (which `import mcpsync`
    must not load): the keyword-only names follow the positional ones in ``co_varnames``.
    """
    found: Set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        code = getattr(init, "__code__", None)
        if code is None:
            continue
        found.update(code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])
        if not code.co_flags & _CO_VARKEYWORDS:
            break
    return frozenset(found)


_STDIO_OPTIONS = options_of(StdioTransport)
_transport_options: Optional[FrozenSet[str]] = None


def all_transport_options() -> FrozenSet[str]:
    """The ``connect()`` options that configure the transport (any transport a target can become);
    every other one is the client's."""
    global _transport_options
    if _transport_options is None:
        _transport_options = frozenset().union(*(options_of(cls) for cls in classes().values()))
    return _transport_options


def __getattr__(name: str) -> Any:
    # CLASSES and TRANSPORT_OPTIONS, read as constants (by the tests), without loading the HTTP
    # transports at import
    if name == "CLASSES":
        return classes()
    if name == "TRANSPORT_OPTIONS":
        return all_transport_options()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def config_type(transport: Transport) -> str:
    """The config ``type`` that names ``transport``'s kind: ``stdio``, ``http`` or ``sse`` (another kind as is)."""
    for name, cls in classes().items():
        if transport.kind == cls.kind:
            return name
    return transport.kind


def fallback_for(transport: Transport, error: BaseException) -> Optional[Transport]:
    """After a failed connect over ``transport``: another transport to try instead, or None.

    Streamable HTTP built with ``legacy_fallback=True`` (a bare ``url`` target or config entry)
    whose very first POST was answered 400, 404 or 405 gets the legacy HTTP+SSE transport, built
    from its settings; never for 401 or 403, which are about credentials. The new transport takes
    over the old one's callbacks: ``on_close`` and ``on_error`` are moved, not shared. A stand-in
    for another transport (a cassette's replay) that has a ``fallback_for`` of its own answers
    itself: it plays back the fallback that was recorded.
    """
    own = getattr(transport, "fallback_for", None)
    if callable(own):
        alternate: Optional[Transport] = own(error)
        return alternate
    from .sse import SSETransport
    from .streamable_http import FALLBACK_STATUSES, StreamableHTTPTransport

    if not (isinstance(transport, StreamableHTTPTransport) and transport.legacy_fallback
            and transport.first_post_refused and isinstance(error, HTTPStatusError)
            and not isinstance(error, SessionExpired) and error.status_code in FALLBACK_STATUSES):
        return None
    log.info("[%s] %s answered %d to the first POST; trying the legacy HTTP+SSE transport",
             transport.name, display_url(transport.url), error.status_code)
    taken = options_of(SSETransport)
    settings = {key: value for key, value in transport.settings().items() if key in taken}
    alternate = SSETransport(transport.url, **settings)
    alternate.fallback_from = error  # its own failure then tells both attempts
    alternate.on_notification = transport.on_notification
    alternate.on_error, transport.on_error = transport.on_error, None
    alternate.on_close, transport.on_close = transport.on_close, None
    tap = transport.message_tap
    if tap is not None:  # a recording goes on through the transport that takes over
        tap("switch", alternate.kind)
        alternate.set_message_tap(tap)
    return alternate


def create_transport(config: Dict[str, Any], **options: Any) -> Transport:
    """Build an unopened transport from a server config dict.

    ``type`` omitted or ``"stdio"`` gives a :class:`StdioTransport` (keys
    ``command``, ``args``, ``env``, ``cwd``, ``timeout`` in milliseconds).
    ``"http"``, ``"streamable-http"`` or ``"streamableHttp"`` gives a
    :class:`StreamableHTTPTransport` and ``"sse"`` an :class:`SSETransport`
    (keys ``url``, ``headers``, ``token``, ``verify``, ``timeout`` in
    milliseconds). A ``url`` without a ``type`` gives a Streamable HTTP
    transport that offers the legacy HTTP+SSE fallback during the handshake.
    ``options`` are passed to the transport and win over the config.

    The transport built goes through the one seam (:func:`._seam.hand_over`) before it is returned.

    Raises:
        ValueError: the config is incomplete or names an unknown type.
    """
    return hand_over(_build(config, options))


def _build(config: Dict[str, Any], options: Dict[str, Any]) -> Transport:
    if not isinstance(config, dict):
        raise ValueError(f"A server config must be a dict, not {type(config).__name__}")
    declared = config.get("type")
    if declared is None and "url" in config and "command" not in config:
        kind = HTTP
        options.setdefault("legacy_fallback", True)
    elif declared is None:
        kind = STDIO
    else:
        named = TYPE_NAMES.get(declared) if isinstance(declared, str) else None
        if named is None:
            raise ValueError(f"Unknown transport type {declared!r}: expected 'stdio', 'http' or 'sse'")
        kind = named
    cls = classes()[kind]
    if "timeout" in config and "timeout" not in options:
        options["timeout"] = float(config["timeout"]) / 1000.0  # config files say milliseconds
    for key in cls.config_keys:
        if key in config and key not in options:
            options[key] = config[key]
    if kind == STDIO:
        command = config.get("command")
        if not isinstance(command, str) or not command:
            raise ValueError("stdio server config needs a 'command' string")
        args = config.get("args") or []
        if not isinstance(args, list):
            raise ValueError("'args' must be a list of strings")
        return StdioTransport(command, args, **options)
    url = config.get("url")
    if not isinstance(url, str) or not url:
        raise ValueError(f"An HTTP server config needs a 'url' string (type {config.get('type')!r})")
    return cls(url, **options)  # type: ignore[call-arg]  # an HTTP transport: (url, **options)


def transport_for(target: Target, options: Mapping[str, Any]) -> Tuple[Transport, Dict[str, Any]]:
    """The (unopened) transport for ``target``, and the options left for the client.

    Raises:
        ConfigError: ``target`` is none of the accepted forms (the text says which forms
            are, and how to write this one), or transport options were given with a ready
            transport (only ``timeout`` still applies to one). It is also a ``ValueError``.
    """
    # Which options are the transport's: stdio's own need no HTTP transport loaded to tell
    known = _STDIO_OPTIONS if options.keys() <= _STDIO_OPTIONS else all_transport_options()
    transport_options = {k: v for k, v in options.items() if k in known}
    client_options = {k: v for k, v in options.items() if k not in known}
    if isinstance(target, Transport):
        if "timeout" in transport_options:  # the one option a ready transport can still take
            client_options["timeout"] = transport_options.pop("timeout")
        if transport_options:
            raise ConfigError(f"Transport options {sorted(transport_options)} do not apply to a ready transport: "
                              "give them to the transport when you build it")
        return target, client_options
    if isinstance(target, Mapping):
        if "command" not in target and "url" not in target:
            keys = ", ".join(repr(str(key)) for key in list(target)[:8]) or "none"
            raise ConfigError(f"A server config dict needs 'command' (a stdio server) or 'url' (an HTTP server); "
                              f"this one has the keys {keys}. {ACCEPTED}")
        try:
            return create_transport(dict(target), **transport_options), client_options
        except ConfigError:
            raise
        except ValueError as exc:
            raise ConfigError(f"{exc}. {ACCEPTED}") from exc
    if isinstance(target, str) and target.lower().startswith(("http://", "https://")):
        return create_transport({"url": target}, **transport_options), client_options
    if isinstance(target, str):
        raise ConfigError(_string_advice(target))
    if isinstance(target, Sequence) and not isinstance(target, (bytes, bytearray)) and target \
            and all(isinstance(a, str) for a in target):
        return hand_over(StdioTransport(target[0], list(target[1:]), **transport_options)), client_options
    raise ConfigError(f"Cannot connect to {_what(target)}. {ACCEPTED}")


#: The forms ``connect()`` takes, for every message about a target it does not.
ACCEPTED = ("connect() takes an argv list such as ['python', 'server.py'], an http:// or https:// URL, a "
            "server config dict such as {'command': 'python', 'args': ['server.py']} or {'url': "
            "'https://host/mcp'}, or a Transport")

# host:port, host:port/path, localhost/path: an HTTP address written without its scheme.
_SCHEMELESS = re.compile(r"^(localhost|\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+:[0-9]{1,5})(/\S*)?$")


def _string_advice(target: str) -> str:
    """What to write instead of the string ``target`` (a URL without a scheme, a command line)."""
    text = target.strip()
    if not text:
        return f"Cannot connect to an empty string. {ACCEPTED}"
    if _SCHEMELESS.match(text):
        shown = text.split("?", 1)[0] + ("?..." if "?" in text else "")  # a query may hold a key
        return (f"Cannot connect to the string {shown!r}: it looks like an HTTP address without its scheme; "
                f"write 'http://{shown}' (or 'https://{shown}'). {ACCEPTED}")
    import shlex  # only to explain a rejected target: keeps `import mcpsync` light

    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    if len(words) > 1 or "/" in text or "\\" in text or text.endswith((".py", ".js", ".exe")):
        suggestion = ", ".join(repr(word) for word in words[:2]) + (", ..." if len(words) > 2 else "")
        return (f"Cannot connect to a string that looks like a command line: give the "
                f"command as a list of arguments, e.g. connect([{suggestion}]) (shlex.split(command) builds "
                f"the list from a string). {ACCEPTED}")
    return f"Cannot connect to the string {text[:40]!r}: it is neither an http(s):// URL nor a command. {ACCEPTED}"


def _what(target: Any) -> str:
    """The target in words, without its contents (an object's repr may hold anything)."""
    if isinstance(target, (list, tuple)):
        if not target:
            return "an empty argv list"
        bad = next(i for i, arg in enumerate(target) if not isinstance(arg, str))
        return f"an argv list whose item {bad} is {_a(type(target[bad]).__name__)}, not a string (convert it with str())"
    if isinstance(target, (bool, int, float)):
        return f"{target!r} ({_a(type(target).__name__)})"
    return _a(type(target).__name__)


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1].lower() in "aeiou" else f"a {noun}"
