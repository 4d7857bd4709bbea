"""What a server offers: :class:`ServerCapabilities`, the typed ``capabilities`` of either era.

A legacy server gives its capabilities in the ``initialize`` result, a 2026-07-28 one in
``server/discover``; both have the same members (``tools``, ``resources``, ``prompts``,
``logging``, ``completions``, ``experimental``, ``extensions``, and 2025-11-25's ``tasks``).
:class:`ServerCapabilities` is still the wire dict, so code that treated
``client.server_capabilities`` as one keeps working; the typed attributes read it.

Values: nothing here blocks or does I/O. A client replaces its ``ServerCapabilities`` at
each handshake and never changes one it handed out, so reading one from any thread is safe.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type, TypeVar, cast

from .types import MCPObject, _copy_json

__all__ = ["PromptsCapability", "ResourcesCapability", "ServerCapabilities", "TasksCapability", "ToolsCapability"]

C = TypeVar("C", bound=MCPObject)


class _Part(MCPObject):
    """One capability's settings object (present means offered, even when it is ``{}``)."""

    __slots__ = ()

    def _flag(self, key: str) -> bool:
        """A boolean setting: True only for JSON ``true``."""
        return self._data.get(key) is True


class ToolsCapability(_Part):
    """``capabilities.tools``: the server offers tools."""

    __slots__ = ()
    _repr_fields = ("list_changed",)

    @property
    def list_changed(self) -> bool:
        """It sends ``notifications/tools/list_changed``."""
        return self._flag("listChanged")


class ResourcesCapability(_Part):
    """``capabilities.resources``: the server offers resources."""

    __slots__ = ()
    _repr_fields = ("subscribe", "list_changed")

    @property
    def subscribe(self) -> bool:
        """Clients may subscribe to a resource's updates (``resources/subscribe``)."""
        return self._flag("subscribe")

    @property
    def list_changed(self) -> bool:
        """It sends ``notifications/resources/list_changed``."""
        return self._flag("listChanged")


class PromptsCapability(_Part):
    """``capabilities.prompts``: the server offers prompts."""

    __slots__ = ()
    _repr_fields = ("list_changed",)

    @property
    def list_changed(self) -> bool:
        """It sends ``notifications/prompts/list_changed``."""
        return self._flag("listChanged")


class TasksCapability(_Part):
    """``capabilities.tasks`` (2025-11-25): the server runs requests as tasks.

    A 2026-07-28 server declares tasks as the ``io.modelcontextprotocol/tasks`` extension
    instead (see :attr:`ServerCapabilities.extensions`).
    """

    __slots__ = ()
    _repr_fields = ("list", "cancel", "tool_calls")

    @property
    def list(self) -> bool:
        """It answers ``tasks/list``."""
        return "list" in self._data

    @property
    def cancel(self) -> bool:
        """It answers ``tasks/cancel``."""
        return "cancel" in self._data

    @property
    def tool_calls(self) -> bool:
        """A ``tools/call`` may run as a task (``requests.tools.call``)."""
        requests = self._data.get("requests")
        tools = requests.get("tools") if isinstance(requests, dict) else None
        return isinstance(tools, dict) and "call" in tools


class ServerCapabilities(Dict[str, Any]):
    """What the server offers, typed: the ``capabilities`` of ``initialize`` or ``server/discover``.

    ::

        caps = client.server_capabilities
        if caps.resources and caps.resources.subscribe:
            client.subscribe("file:///log.txt", on_update)
        if caps.tools and caps.tools.list_changed:
            client.on_notification("notifications/tools/list_changed", refresh)
        if "io.modelcontextprotocol/skills" in caps.extensions:
            print(client.list_skills())

    It is the wire dict too, so ``"logging" in caps``, ``caps["tools"]``,
    ``caps.get("prompts")``, iteration, ``json.dumps(caps)`` and ``caps == {...}`` work as
    on the plain dict it replaces, and members this version does not know stay in it.
    A capability that is absent (or ``null``) is None (or False); one that is present is
    offered, even as ``{}``. :meth:`to_dict` gives a deep copy of the wire form.

    Both eras have the same members; a 2026-07-28 server usually leaves out the
    ``listChanged`` and ``subscribe`` flags (its clients listen on ``subscriptions/listen``)
    and declares tasks as an extension.
    """

    __slots__ = ()

    @classmethod
    def from_dict(cls, data: Any) -> "ServerCapabilities":
        """``data`` (copied, shallowly) as capabilities; anything but a dict gives none."""
        return cls(data if isinstance(data, dict) else {})

    def to_dict(self) -> Dict[str, Any]:
        """The wire dict, unknown members included (a deep copy)."""
        return cast(Dict[str, Any], _copy_json(dict(self)))

    def __repr__(self) -> str:
        return f"ServerCapabilities({dict.__repr__(self)})"

    def _part(self, key: str, kind: Type[C]) -> Optional[C]:
        value = self.get(key)
        return None if value is None else kind.from_dict(value if isinstance(value, dict) else {})

    def _named(self, key: str) -> Dict[str, Dict[str, Any]]:
        value = self.get(key)
        if not isinstance(value, dict):
            return {}
        return {name: settings if isinstance(settings, dict) else {} for name, settings in value.items()}

    @property
    def tools(self) -> Optional[ToolsCapability]:
        """``tools`` (None: the server offers no tools)."""
        return self._part("tools", ToolsCapability)

    @property
    def resources(self) -> Optional[ResourcesCapability]:
        """``resources`` (None: the server offers no resources)."""
        return self._part("resources", ResourcesCapability)

    @property
    def prompts(self) -> Optional[PromptsCapability]:
        """``prompts`` (None: the server offers no prompts)."""
        return self._part("prompts", PromptsCapability)

    @property
    def tasks(self) -> Optional[TasksCapability]:
        """2025-11-25's ``tasks`` (None: not declared that way)."""
        return self._part("tasks", TasksCapability)

    @property
    def logging(self) -> bool:
        """The server sends log messages and takes a log level (``logging``)."""
        return self.get("logging") is not None

    @property
    def completions(self) -> bool:
        """The server completes prompt and resource-template arguments (``completions``)."""
        return self.get("completions") is not None

    @property
    def experimental(self) -> Dict[str, Dict[str, Any]]:
        """``experimental``: non-standard capabilities by name, with their settings (a new dict)."""
        return self._named("experimental")

    @property
    def extensions(self) -> Dict[str, Dict[str, Any]]:
        """``extensions``: extension ids (``io.modelcontextprotocol/skills``, ...) and their settings (a new dict)."""
        return self._named("extensions")
