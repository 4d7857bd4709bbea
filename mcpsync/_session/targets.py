"""What ``mcpsync.connect(target, **options)`` connects to: a target turned into a transport.

A target is an argv list (stdio), an ``http(s)://`` URL (Streamable HTTP, with its
legacy HTTP+SSE fallback), a server config dict, or a ready
:class:`~mcpsync.transports.Transport`. The keyword options are split into the
transport's and the client's.

Pure construction: no thread is started and nothing is opened here (the client's
``connect()`` opens the transport). Raises ``ValueError`` for a target or options
that do not fit together.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Sequence, Tuple, Union

from ..transports import StdioTransport, Transport, create_transport

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
        ValueError: ``target`` is none of the accepted forms, or transport options
            were given with a ready transport (only ``timeout`` still applies to one).
    """
    transport_options = {k: v for k, v in options.items() if k in TRANSPORT_OPTIONS}
    client_options = {k: v for k, v in options.items() if k not in TRANSPORT_OPTIONS}
    if isinstance(target, Transport):
        if "timeout" in transport_options:  # the one option a ready transport can still take
            client_options["timeout"] = transport_options.pop("timeout")
        if transport_options:
            raise ValueError(f"Transport options {sorted(transport_options)} do not apply to a ready transport")
        return target, client_options
    if isinstance(target, Mapping):
        return create_transport(dict(target), **transport_options), client_options
    if isinstance(target, str) and target.lower().startswith(("http://", "https://")):
        return create_transport({"url": target}, **transport_options), client_options
    if isinstance(target, str):
        raise ValueError("Give the command as a list of arguments, e.g. ['python', 'server.py'] "
                         f"(got the string {target!r})")
    if isinstance(target, Sequence) and target and all(isinstance(a, str) for a in target):
        return StdioTransport(target[0], list(target[1:]), **transport_options), client_options
    raise ValueError(f"Cannot connect to {target!r}: expected an argv list, a config dict or a Transport")
