"""Answering the server's requests for input (sampling, elicitation, roots) with the client's handlers.

Both eras use one :class:`Responder`: legacy servers send these as JSON-RPC requests (served
on the engine's worker threads), modern ones put them in an ``input_required`` result (answered
on the calling thread, see :mod:`mcpsync._session.mrtr`). The handlers are read from their
owner (the client) at each use, so a handler set after connecting is honoured.

Threads: :meth:`Responder.answer` may run on several threads at once; it runs the user's
handler on the thread that calls it and never on the reader thread.
"""

from __future__ import annotations

import copy
import os
from typing import Any, Callable, List, Mapping, Optional, Protocol, Sequence

from .._log import getLogger
from .._protocol.methods import ELICITATION_CREATE, ROOTS_LIST, SAMPLING_CREATE_MESSAGE
from .._rpc import jsonrpc as rpc
from .._rpc.jsonrpc import JSONObject
from ..exceptions import MCPError
from ..handlers import CreateMessageParams, ElicitParams, RootsSource
from ..types import Implementation, MCPObject
from .callbacks import check_callback

__all__ = ["HandlerOwner", "Responder", "file_uri", "with_defaults"]

log = getLogger("mcpsync.client")


class HandlerOwner(Protocol):
    """Where a :class:`Responder` finds the handlers (the client's attributes, read at each use)."""

    @property
    def roots(self) -> Optional[RootsSource]: ...

    @property
    def sampling_handler(self) -> Optional[Callable[..., Any]]: ...

    @property
    def sampling_tools(self) -> bool: ...

    @property
    def elicitation_handler(self) -> Optional[Callable[..., Any]]: ...

    @property
    def elicitation_modes(self) -> Sequence[str]: ...

    @property
    def server_info(self) -> Optional[Implementation]: ...


class Responder:
    """Answers the server's requests for input with the client's handlers, in both eras.

    Raises :class:`~mcpsync.MCPError` with the code the spec gives: ``-32601``
    for a kind with no handler, ``-32602`` for an elicitation mode or sampling
    tools the client did not declare, ``-1`` when a sampling handler refuses.
    """

    def __init__(self, owner: HandlerOwner) -> None:
        """Raises ``TypeError`` when a handler the owner already holds has the wrong signature
        (one set later is checked only when it is called)."""
        self._owner = owner
        check_callback(owner.sampling_handler, "sampling_handler", "(params)")
        check_callback(owner.elicitation_handler, "elicitation_handler", "(params)")
        check_callback(getattr(owner, "logging_handler", None), "logging_handler", "(message)")
        if callable(owner.roots):
            check_callback(owner.roots, "roots", "()")

    def capabilities(self, modern: bool) -> JSONObject:
        """The client capabilities these handlers support (``{}`` when none are registered)."""
        owner = self._owner
        capabilities: JSONObject = {}
        if owner.roots is not None:
            capabilities["roots"] = {} if modern else {"listChanged": True}
        if owner.sampling_handler is not None:
            capabilities["sampling"] = {"tools": {}} if owner.sampling_tools else {}
        if owner.elicitation_handler is not None:
            modes = tuple(owner.elicitation_modes)
            # An empty object means form only (and is what 2025-06-18 servers understand).
            capabilities["elicitation"] = {} if modes == ("form",) else {mode: {} for mode in modes}
        return capabilities

    def answer(self, method: str, params: Optional[JSONObject]) -> JSONObject:
        """The wire result for one request for input."""
        params = params or {}
        owner = self._owner
        if method == ROOTS_LIST and owner.roots is not None:
            return {"roots": self.roots_payload()}
        if method == SAMPLING_CREATE_MESSAGE and owner.sampling_handler is not None:
            return self._sample(CreateMessageParams(params))
        if method == ELICITATION_CREATE and owner.elicitation_handler is not None:
            return self._elicit(ElicitParams(params, server=owner.server_info))
        raise MCPError(rpc.METHOD_NOT_FOUND, f"Method not found: {method}")

    def roots_payload(self) -> List[JSONObject]:
        configured = self._owner.roots
        source = configured() if callable(configured) else configured
        roots: List[JSONObject] = []
        for root in source or ():
            entry = dict(root) if isinstance(root, Mapping) else {"uri": file_uri(str(root))}
            if not str(entry.get("uri", "")).startswith("file://"):
                log.warning("Leaving out root %r: roots must be file:// URIs", entry.get("uri"))
                continue
            roots.append(entry)
        return roots

    def _sample(self, params: CreateMessageParams) -> JSONObject:
        handler = self._owner.sampling_handler
        if not self._owner.sampling_tools and ("tools" in params or "toolChoice" in params):
            raise MCPError(rpc.INVALID_PARAMS, "This client did not declare sampling.tools; the request has tools")
        assert handler is not None
        result = _wire(handler(params))
        if not isinstance(result, dict):
            raise MCPError(rpc.INTERNAL_ERROR, "The sampling handler returned no result")
        return result

    def _elicit(self, params: ElicitParams) -> JSONObject:
        handler = self._owner.elicitation_handler
        if params.mode not in self._owner.elicitation_modes:
            raise MCPError(rpc.INVALID_PARAMS, f"This client does not support {params.mode!r} elicitation")
        assert handler is not None
        result = _wire(handler(params))
        if not isinstance(result, dict) or result.get("action") not in ("accept", "decline", "cancel"):
            raise MCPError(rpc.INTERNAL_ERROR, "The elicitation handler returned no accept, decline or cancel")
        if result["action"] == "accept" and params.mode == "form":
            result["content"] = with_defaults(params.requested_schema, result.get("content"))
        elif params.mode == "url" or result["action"] != "accept":
            result.pop("content", None)
        return result


def with_defaults(schema: Mapping[str, Any], content: Any) -> JSONObject:
    """``content`` with the schema's ``default`` filled in for every property the person left out."""
    filled: JSONObject = dict(content) if isinstance(content, Mapping) else {}
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, prop in properties.items():
            if name not in filled and isinstance(prop, Mapping) and "default" in prop:
                filled[name] = copy.deepcopy(prop["default"])
    return filled


def _wire(value: Any) -> Any:
    return value.to_dict() if isinstance(value, MCPObject) else (dict(value) if isinstance(value, Mapping) else value)


def file_uri(path: str) -> str:
    """A ``file://`` URI for a path (``~`` expanded, made absolute); a URI is returned as it is."""
    if "://" in path:
        return path
    from pathlib import Path  # only for a root given as a path: keeps `import mcpsync` light

    return Path(os.path.abspath(os.path.expanduser(path))).as_uri()
