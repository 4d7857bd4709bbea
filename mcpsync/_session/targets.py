"""What ``mcpsync.connect(target, **options)`` connects to: a target turned into a transport.

A target is an argv list (stdio), an ``http(s)://`` URL (Streamable HTTP, with its
legacy HTTP+SSE fallback), a server config dict, or a ready
:class:`~mcpsync.transports.Transport`. The keyword options are split into the
transport's and the client's.

Pure construction: no thread is started and nothing is opened here (the client's
``connect()`` opens the transport). Raises :class:`~mcpsync.ConfigError` (a ``ValueError``)
for a target or options that do not fit together; its text names the forms accepted and,
for the usual slips (a command line as one string, a URL without ``http://``), the fix.
Messages never quote a config's values, a URL's query, or the arguments past a command's
first two words: they may hold secrets.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Mapping, Sequence, Tuple, Union

from ..exceptions import ConfigError
from ..transports import StdioTransport, Transport, create_transport
from ..transports._seam import hand_over

__all__ = ["TRANSPORT_OPTIONS", "Target", "transport_for"]

Target = Union[str, Sequence[str], Mapping[str, Any], Transport]

#: The ``connect()`` options that configure the transport; every other one is the client's.
TRANSPORT_OPTIONS = frozenset({
    "env", "cwd", "inherit_env", "name", "timeout", "max_message_size", "shutdown_timeout", "max_workers",
    # HTTP transports
    "headers", "token", "auth", "verify", "cert", "proxies", "trust_env", "connect_timeout", "endpoint_timeout",
    "legacy_fallback", "resume_delay", "pool_size",
})


def transport_for(target: Target, options: Mapping[str, Any]) -> Tuple[Transport, Dict[str, Any]]:
    """The (unopened) transport for ``target``, and the options left for the client.

    Raises:
        ConfigError: ``target`` is none of the accepted forms (the text says which forms
            are, and how to write this one), or transport options were given with a ready
            transport (only ``timeout`` still applies to one). It is also a ``ValueError``.
    """
    transport_options = {k: v for k, v in options.items() if k in TRANSPORT_OPTIONS}
    client_options = {k: v for k, v in options.items() if k not in TRANSPORT_OPTIONS}
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
