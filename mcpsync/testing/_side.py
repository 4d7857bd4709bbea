"""The server side a FakeServer's connections work against: its settings, registry and recorder.

A :class:`~mcpsync.testing.FakeServer` is the face tests use; what its
connections need of it is far smaller, and is this :class:`ServerSide`:

- :class:`Settings`: who the server says it is, which versions it speaks,
  its paging, cache hint and timeouts;
- :class:`~mcpsync.testing._registry.Registry`: what it declared;
- :class:`~mcpsync.testing._recorder.Recorder`: where requests and
  notifications are logged and faults are matched.

The connection, request and transport modules receive a ``ServerSide``, never
the ``FakeServer``, so they import nothing above this module. The one link
back up is :attr:`ServerSide.owner`, kept only so that ``ctx.server`` can hand
the user their ``FakeServer``; :attr:`ServerSide.context` is the owner's ``Context`` class, which
types it so (handed down, so that nothing below the ``FakeServer``'s module names it, even for a
type checker).

Thread safety: the registry and recorder lock for themselves; settings are
plain values read without a lock (tests set them before serving, if at all).
Nothing here blocks.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Tuple

from .._rpc.jsonrpc import JSONObject
from ._protocol import SKILLS_EXTENSION
from ._recorder import Recorder
from ._registry import Registry

__all__ = ["ServerSide", "Settings"]


@dataclass
class Settings:
    """How a FakeServer presents itself and paces its answers (the ``FakeServer`` arguments)."""

    name: str
    version: str
    title: Optional[str]
    instructions: Optional[str]
    legacy_versions: Tuple[str, ...]
    """The ``initialize`` versions spoken, oldest first (the last one is offered when asked for another)."""
    modern_versions: Tuple[str, ...]
    """The 2026-07-28-era versions spoken, oldest first."""
    page_size: Optional[int]
    request_timeout: float
    input_timeout: float
    ttl_ms: int
    capabilities: Optional[JSONObject] = None
    """Capabilities to advertise instead of those derived from the declarations."""

    def server_info(self) -> JSONObject:
        """The ``serverInfo`` it gives (``name``, ``version`` and ``title``)."""
        info: JSONObject = {"name": self.name, "version": self.version}
        if self.title is not None:
            info["title"] = self.title
        return info


@dataclass(eq=False)  # one side per server: compared by identity
class ServerSide:
    """What a connection may use of its server: settings, declarations, the log; plus its owner for ``ctx.server``."""

    settings: Settings
    registry: Registry = field(default_factory=Registry)
    recorder: Recorder = field(init=False)
    owner: object = None
    """The public object (the ``FakeServer``) this side serves; opaque here."""
    context: Optional[Callable[[Any], Any]] = None
    """The class a function's ``ctx`` is made of: the owner's :class:`~mcpsync.testing.Context`, whose
    ``server`` is typed as the owner (None: the plain one of :mod:`~mcpsync.testing._context`)."""

    def __post_init__(self) -> None:
        settings = self.settings
        self.recorder = Recorder(lambda: settings.name)  # the name now, not at construction: messages follow renames

    @property
    def name(self) -> str:
        """The server's name, for log lines and thread names."""
        return self.settings.name

    def capabilities(self, era: str = "legacy") -> JSONObject:
        """The capabilities advertised to a client of ``era`` (``"legacy"`` or ``"modern"``).

        Derived from what is declared (plus logging and completions; skills
        declare the skills extension) unless the settings give them. Both eras
        get the same ``listChanged`` and ``subscribe`` flags: a legacy client
        is told on its session, a 2026-07-28 one on the ``subscriptions/listen``
        streams it opens.
        """
        if self.settings.capabilities is not None:
            return copy.deepcopy(self.settings.capabilities)
        offered = self.registry.offers()
        capabilities: JSONObject = {}
        if "tools" in offered:
            capabilities["tools"] = {"listChanged": True}
        if "resources" in offered:
            capabilities["resources"] = {"subscribe": True, "listChanged": True}
        if "prompts" in offered:
            capabilities["prompts"] = {"listChanged": True}
        capabilities["logging"] = {}
        capabilities["completions"] = {}
        if "skills" in offered:
            capabilities["extensions"] = {SKILLS_EXTENSION: {}}
        return capabilities
