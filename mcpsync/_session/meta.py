"""The ``_meta`` every modern (2026-07-28) request carries: version, capabilities, client info.

One place builds it, so ``server/discover``, ordinary calls, multi round-trip
retries, ``subscriptions/listen`` and ``tasks/*`` can never disagree.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

# The keys are the protocol's (one table, mcpsync._protocol.meta); named here too, for the session.
from .._protocol.meta import CLIENT_CAPABILITIES as CLIENT_CAPABILITIES
from .._protocol.meta import CLIENT_INFO as CLIENT_INFO
from .._protocol.meta import LOG_LEVEL as LOG_LEVEL
from .._protocol.meta import PROTOCOL_VERSION as PROTOCOL_VERSION
from .._protocol.meta import SERVER_INFO as SERVER_INFO
from .._protocol.meta import SKILLS_EXTENSION as SKILLS_EXTENSION
from .._protocol.meta import SUBSCRIPTION_ID as SUBSCRIPTION_ID
from .._protocol.meta import TASKS_EXTENSION as TASKS_EXTENSION
from .._rpc.jsonrpc import JSONObject


def request_meta(version: str, capabilities: Mapping[str, Any], client_info: Optional[Mapping[str, Any]],
                 log_level: Optional[str] = None) -> JSONObject:
    """The reserved ``_meta`` keys of one modern request (client info and log level only when given)."""
    meta: JSONObject = {PROTOCOL_VERSION: version, CLIENT_CAPABILITIES: _copy(capabilities)}
    if client_info is not None:
        meta[CLIENT_INFO] = dict(client_info)
    if log_level is not None:
        meta[LOG_LEVEL] = log_level
    return meta


def with_meta(params: Optional[Mapping[str, Any]], meta: Mapping[str, Any]) -> JSONObject:
    """``params`` with ``meta`` merged into its ``_meta`` (the caller's own keys, e.g. a progress token, kept).

    The reserved keys always come from ``meta``: a request's version and
    capabilities are the client's to state, not the caller's.
    """
    merged: JSONObject = dict(params or {})
    own = merged.get("_meta")
    merged["_meta"] = {**own, **meta} if isinstance(own, dict) else dict(meta)
    return merged


def with_extension(capabilities: Mapping[str, Any], extension: str) -> JSONObject:
    """``capabilities`` plus ``extensions[extension] = {}`` (a new dict)."""
    result = _copy(capabilities)
    extensions = dict(result.get("extensions") or {})
    extensions.setdefault(extension, {})
    result["extensions"] = extensions
    return result


def server_info(result: Any) -> Optional[Dict[str, Any]]:
    """The ``serverInfo`` a modern result's ``_meta`` carries (None when it carries none)."""
    meta = result.get("_meta") if isinstance(result, dict) else None
    info = meta.get(SERVER_INFO) if isinstance(meta, dict) else None
    return info if isinstance(info, dict) else None


def subscription_id(params: Optional[Mapping[str, Any]]) -> Any:
    """The ``subscriptionId`` a notification's ``_meta`` names (None when it names none)."""
    meta = params.get("_meta") if params is not None else None
    return meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None


def _copy(value: Mapping[str, Any]) -> Dict[str, Any]:
    return {key: (_copy(item) if isinstance(item, Mapping) else item) for key, item in value.items()}
