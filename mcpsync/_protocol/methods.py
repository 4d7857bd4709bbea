"""The MCP methods and notifications: every name, once, and one table of what each request needs.

Each request is a row of :data:`METHODS`: the era it exists in, the server capability it needs,
whether it is paged, whether a 2026-07-28 server may answer it ``input_required``, and which
param names it in the ``Mcp-Name`` routing header. Everything else in the package, the fake
server included, names a method through the constants here and reads its facts from the table,
so adding a method is one constant, one row, and its feature's code.

Constants and pure functions only: no I/O, no threads, safe from any thread.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, NamedTuple, Optional

# -- requests, client to server ---------------------------------------------------------------

INITIALIZE = "initialize"
PING = "ping"
SERVER_DISCOVER = "server/discover"
TOOLS_LIST = "tools/list"
TOOLS_CALL = "tools/call"
RESOURCES_LIST = "resources/list"
RESOURCES_TEMPLATES_LIST = "resources/templates/list"
RESOURCES_READ = "resources/read"
RESOURCES_SUBSCRIBE = "resources/subscribe"
RESOURCES_UNSUBSCRIBE = "resources/unsubscribe"
PROMPTS_LIST = "prompts/list"
PROMPTS_GET = "prompts/get"
COMPLETION_COMPLETE = "completion/complete"
LOGGING_SET_LEVEL = "logging/setLevel"
SUBSCRIPTIONS_LISTEN = "subscriptions/listen"
TASKS_GET = "tasks/get"
TASKS_RESULT = "tasks/result"
TASKS_LIST = "tasks/list"
TASKS_CANCEL = "tasks/cancel"
TASKS_UPDATE = "tasks/update"
SKILLS_LIST = "skills/list"
SKILLS_GET = "skills/get"

# -- requests, server to client ---------------------------------------------------------------

SAMPLING_CREATE_MESSAGE = "sampling/createMessage"
ELICITATION_CREATE = "elicitation/create"
ROOTS_LIST = "roots/list"

# -- notifications ----------------------------------------------------------------------------

#: JSON-RPC level: the engine (:mod:`mcpsync._rpc.jsonrpc`) spells these two itself, being MCP-free.
NOTIFY_CANCELLED = "notifications/cancelled"
NOTIFY_PROGRESS = "notifications/progress"
NOTIFY_INITIALIZED = "notifications/initialized"
NOTIFY_MESSAGE = "notifications/message"
NOTIFY_TOOLS_LIST_CHANGED = "notifications/tools/list_changed"
NOTIFY_PROMPTS_LIST_CHANGED = "notifications/prompts/list_changed"
NOTIFY_RESOURCES_LIST_CHANGED = "notifications/resources/list_changed"
NOTIFY_RESOURCES_UPDATED = "notifications/resources/updated"
NOTIFY_ROOTS_LIST_CHANGED = "notifications/roots/list_changed"
NOTIFY_SUBSCRIPTIONS_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"

#: ``list_changed`` notification of each list the server keeps.
LIST_CHANGED: Dict[str, str] = {
    "tools": NOTIFY_TOOLS_LIST_CHANGED,
    "prompts": NOTIFY_PROMPTS_LIST_CHANGED,
    "resources": NOTIFY_RESOURCES_LIST_CHANGED,
}

# -- the table --------------------------------------------------------------------------------

LEGACY, MODERN, BOTH = "legacy", "modern", "both"


class Method(NamedTuple):
    """What the protocol says of one client-to-server request."""

    name: str
    #: ``"legacy"`` (2024-11-05 .. 2025-11-25), ``"modern"`` (2026-07-28 on) or ``"both"``.
    era: str
    #: The server capability the request needs (None: always allowed).
    capability: Optional[str] = None
    #: The key of the list a paged request answers (None: not paged).
    list_key: Optional[str] = None
    #: A 2026-07-28 server may answer it ``resultType: "input_required"`` (multi round-trip); the
    #: fake server answers these from user code, on a worker thread.
    input_required: bool = False
    #: The param that names its target in the ``Mcp-Name`` routing header (None: no such header).
    routing: Optional[str] = None
    #: An extension the request belongs to (None: the core protocol).
    extension: Optional[str] = None

    @property
    def paged(self) -> bool:
        return self.list_key is not None


METHODS: Dict[str, Method] = {m.name: m for m in (
    Method(INITIALIZE, LEGACY),
    Method(PING, LEGACY),
    Method(SERVER_DISCOVER, MODERN),
    Method(TOOLS_LIST, BOTH, "tools", list_key="tools"),
    Method(TOOLS_CALL, BOTH, "tools", input_required=True, routing="name"),
    Method(RESOURCES_LIST, BOTH, "resources", list_key="resources"),
    Method(RESOURCES_TEMPLATES_LIST, BOTH, "resources", list_key="resourceTemplates"),
    Method(RESOURCES_READ, BOTH, "resources", input_required=True, routing="uri"),
    Method(RESOURCES_SUBSCRIBE, LEGACY, "resources"),
    Method(RESOURCES_UNSUBSCRIBE, LEGACY, "resources"),
    Method(PROMPTS_LIST, BOTH, "prompts", list_key="prompts"),
    Method(PROMPTS_GET, BOTH, "prompts", input_required=True, routing="name"),
    Method(COMPLETION_COMPLETE, BOTH, "completions"),
    Method(LOGGING_SET_LEVEL, LEGACY, "logging"),
    Method(SUBSCRIPTIONS_LISTEN, MODERN),
    Method(TASKS_GET, BOTH, routing="taskId", extension="tasks"),
    Method(TASKS_RESULT, BOTH, extension="tasks"),
    Method(TASKS_LIST, BOTH, list_key="tasks", extension="tasks"),
    Method(TASKS_CANCEL, BOTH, routing="taskId", extension="tasks"),
    Method(TASKS_UPDATE, BOTH, routing="taskId", extension="tasks"),
    Method(SKILLS_LIST, BOTH, extension="skills"),
    Method(SKILLS_GET, BOTH, extension="skills"),
)}


def _where(**facts: object) -> FrozenSet[str]:
    return frozenset(m.name for m in METHODS.values() if all(getattr(m, k) == v for k, v in facts.items()))


#: The requests a server may answer with ``input_required``.
INPUT_REQUIRED: FrozenSet[str] = frozenset(m.name for m in METHODS.values() if m.input_required)
#: Request -> the param that fills ``Mcp-Name``.
ROUTING_FIELDS: Dict[str, str] = {m.name: m.routing for m in METHODS.values() if m.routing is not None}
#: Request -> the server capability it needs.
CAPABILITIES: Dict[str, str] = {m.name: m.capability for m in METHODS.values() if m.capability is not None}
#: Paged request -> the key of its list.
LIST_KEYS: Dict[str, str] = {m.name: m.list_key for m in METHODS.values() if m.list_key is not None}
#: The skills extension's requests (SEP-2640).
SKILL_METHODS: FrozenSet[str] = _where(extension="skills")
#: What a legacy (``initialize``) session may ask, tasks apart.
LEGACY_METHODS: FrozenSet[str] = frozenset(
    m.name for m in METHODS.values() if m.era in (LEGACY, BOTH) and m.extension != "tasks")
#: What a 2026-07-28 request may ask, tasks apart.
MODERN_METHODS: FrozenSet[str] = frozenset(
    m.name for m in METHODS.values() if m.era in (MODERN, BOTH) and m.extension != "tasks")
