"""What a server's config says beyond its transport, applied by the manager: which tools it offers
(``enabled_tools``/``disabled_tools``), how long one connection attempt and one tool call may take
(``startup_timeout``, ``tool_timeout``), whether ``connect_all`` may succeed without it
(``required``), the cap on a tool result's size (``max_output``) and ``enabled: false``.

The keys are read (with the other tools' spellings) by :mod:`mcpsync.config`; docs/config.md has
the table. Everything here is a pure function of a :class:`~mcpsync.config.ServerConfig`, except
:func:`wait_for`, which waits on the manager's condition. Safe from any thread.
"""

from __future__ import annotations

import math
import threading
import time
from fnmatch import fnmatchcase
from typing import Callable, Iterable, List, Optional, Protocol, Sequence, Tuple

from ..config import ServerConfig
from ..exceptions import ConfigError, ServerNotConnected, ToolNotAllowed
from ..types import Tool

__all__ = ["StartupWindow", "ToolNotAllowed", "allows", "check_tool", "disabled_error", "output_limit",
           "refusal", "required_failure", "required_starting", "split_tools", "tool_timeout", "wait_for"]


# -- the tool filter --------------------------------------------------------------------------


def _hidden_by(config: Optional[ServerConfig], tool: str) -> Optional[str]:
    """The rule that hides ``tool`` (None: allowed). Patterns are case-sensitive globs."""
    if config is None:
        return None
    if config.enabled_tools is not None and not any(fnmatchcase(tool, p) for p in config.enabled_tools):
        return f"not in enabled_tools {list(config.enabled_tools)}"
    for pattern in config.disabled_tools:
        if fnmatchcase(tool, pattern):
            return f"disabled_tools {pattern!r}" if pattern != tool else "listed in disabled_tools"
    return None


def allows(config: Optional[ServerConfig], tool: str) -> bool:
    """Whether the manager offers ``tool`` (a tool's own name) of the server ``config`` describes."""
    return _hidden_by(config, tool) is None


def split_tools(config: Optional[ServerConfig], tools: Sequence[Tool]) -> Tuple[List[Tool], List[str]]:
    """``(the tools offered, the names of those filtered out)``, each in the server's order."""
    if config is None or (config.enabled_tools is None and not config.disabled_tools):
        return list(tools), []
    offered = [tool for tool in tools if allows(config, tool.name)]
    return offered, [tool.name for tool in tools if not allows(config, tool.name)]


def refusal(config: Optional[ServerConfig], tool: str, asked: Optional[str] = None) -> Optional[ToolNotAllowed]:
    """The :class:`ToolNotAllowed` for ``tool`` when the config filters it out (``asked``: the name used)."""
    rule = _hidden_by(config, tool)
    if rule is None or config is None:
        return None
    return ToolNotAllowed(asked or tool, config.name, tool, rule, config.source)


def check_tool(config: Optional[ServerConfig], tool: str, asked: Optional[str] = None) -> None:
    """Raise :class:`ToolNotAllowed` when the config filters ``tool`` out."""
    refused = refusal(config, tool, asked)
    if refused is not None:
        raise refused


# -- time limits and output -------------------------------------------------------------------


class StartupWindow:
    """The time one connection attempt may take: ``startup_timeout`` over the handshake and the
    first tool list together when the config sets it, else ``timeout`` for each (as before)."""

    def __init__(self, config: Optional[ServerConfig], timeout: float) -> None:
        limit = config.startup_timeout if config is not None else None
        self._timeout = timeout
        self._end = None if limit is None else time.monotonic() + limit

    def connect(self) -> float:
        """Seconds the connect may take."""
        return self._timeout if self._end is None else max(0.001, self._end - time.monotonic())

    listing = connect  # the first tools/list gets what the connect left


def tool_timeout(config: Optional[ServerConfig], default: float) -> float:
    """The default seconds of a tool call through the manager: ``tool_timeout``, else ``default``."""
    return config.tool_timeout if config is not None and config.tool_timeout else default


def output_limit(config: Optional[ServerConfig], given: Optional[int]) -> Optional[int]:
    """The byte cap of one tool result: the call's ``max_output``, else the server's, else None."""
    if given is not None:
        return given
    return config.max_output if config is not None else None


def disabled_error(name: str, config: ServerConfig) -> ConfigError:
    """What starting a server disabled in its config raises, saying how to enable it."""
    written = "disabled: true" if config.raw.get("disabled") not in (None, False) else "enabled: false"
    return ConfigError(f'server "{name}" is disabled ("{written}" in {config.source}); enable it there to '
                       "start it", server=name, path=config.source)


# -- required servers -------------------------------------------------------------------------


class Starting(Protocol):
    """What :func:`required_failure` reads of a managed server (manager lock held)."""

    name: str
    config: Optional[ServerConfig]
    state: str

    def not_connected_locked(self) -> ServerNotConnected: ...


def required_starting(servers: Iterable[Starting], connecting: str) -> bool:
    """True while a ``required`` server is still in its first attempt (``connecting``)."""
    return any(s.config is not None and s.config.required and s.state == connecting for s in servers)


def required_failure(servers: Iterable[Starting], failed: Iterable[str]) -> Optional[ServerNotConnected]:
    """The error for the first ``required`` server in one of the ``failed`` states (None: none)."""
    states = set(failed)
    for server in servers:
        if server.config is not None and server.config.required and server.state in states:
            error = server.not_connected_locked()
            text = f"required MCP server {server.name!r} did not connect, so connect_all failed: {error}"
            failure = ServerNotConnected(server.name, error.last_error, f"required in {server.config.source}")
            failure.args = (text,)
            failure.__cause__ = error.__cause__
            return failure
    return None


def wait_for(cond: threading.Condition, done: Callable[[], bool], timeout: Optional[float]) -> bool:
    """Wait on ``cond`` (held by the caller) until ``done()``; False if ``timeout`` seconds pass first."""
    deadline = math.inf if timeout is None else time.monotonic() + timeout
    while not done():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        cond.wait(None if math.isinf(remaining) else remaining)
    return True
