"""The client's parts, built once per connection: at construction, in a forked child, after unpickling.

:class:`~mcpsync.Client` is a facade over these parts (the handshake, the session and its call
pipeline, notification routing, subscriptions, list caches, the server's requests). They are
built here so that a client can build them again, whole, when the process it lives in is not
the one that connected it:

* **After fork** (``os.fork()``, ``multiprocessing``'s ``fork`` start method, prefork servers).
  The child's copy of the client gets new parts around a new transport with the same settings
  (:meth:`~mcpsync.transports.Transport.replica`), and keeps its handlers (the constructor's and
  those added with ``on_notification``). The inherited transport turns inert by itself (see
  ``Transport._after_fork_in_child``). A client that was connected in the parent connects again
  on its first call in the child (``after_fork="reconnect"``, the default) or raises
  :class:`~mcpsync.ForkedError` then (``after_fork="raise"``); an explicit ``connect()`` always
  opens a connection of the child's own. Subscriptions, tasks and cached lists of the parent are
  not carried over.
* **After unpickling** (``spawn`` and ``forkserver`` pools, ``ProcessPoolExecutor``, Dask). A
  client pickles as its transport's settings and its options and handlers, never a connection or
  anything learned from the server; it is unpickled unconnected and connects on its first call.
  A handler that cannot be pickled (a lambda, a closure, a bound method of an unpicklable object)
  makes pickling raise ``TypeError`` naming it, and so does a transport without settings.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Callable, Dict, List, NamedTuple, Optional, cast

from ._session.handshake import Handshake
from ._session.inbound import Inbound
from ._features.lists import Lists
from ._session.notifications import NotificationRouter
from ._session.responder import Responder
from ._session.session import Session
from ._session.streams import Streams
from ._features.tools import ToolCalls
from ._features.toolbook import ToolBook
from ._features.subscriptions import Subscriptions
from .exceptions import ForkedError
from .transports.base import Transport

if TYPE_CHECKING:
    from ._features.skills import Skills

__all__ = ["Parts", "build", "child_transport", "connector", "forked_first_use", "pickled_options",
           "manager_refused", "require_picklable"]

#: The constructor options a client pickles with (the transport carries the rest, timeout included).
_OPTIONS = ("protocol", "probe_timeout", "roots", "sampling_handler", "sampling_tools", "elicitation_handler",
            "elicitation_modes", "logging_handler", "client_info", "send_client_info", "tasks", "max_input_rounds",
            "after_fork", "send_baggage", "telemetry", "rate_limit", "max_concurrency", "share", "idle_timeout")
#: Options that hold user code: checked one by one, so the error can name the one that fails.
_HANDLERS = ("roots", "sampling_handler", "elicitation_handler", "logging_handler")


class Parts(NamedTuple):
    """Everything one connection of a client is made of (see :class:`~mcpsync.Client`)."""

    handshake: Handshake
    session: Session
    router: NotificationRouter
    subs: Subscriptions
    streams: Streams
    lists: Lists
    inbound: Inbound
    tool_calls: ToolCalls
    skills: Callable[[], "Skills"]


def build(client: Any, transport: Transport, log_level: Optional[str], router: NotificationRouter) -> Parts:
    """The parts of ``client`` around ``transport`` (nothing is opened or started).

    The parts hold the client only weakly (the responder) or not at all, so a client nobody
    holds stays collectable at once.
    """
    handshake = Handshake(client_info=client.client_info)
    session = Session(
        transport, Responder(cast(Any, weakref.proxy(client))),
        client_info=client.client_info if client.send_client_info else None,
        max_input_rounds=client.max_input_rounds, log_level=log_level, renew=handshake.renew,
        send_baggage=client.send_baggage, telemetry=client.telemetry)
    subs = Subscriptions(session)
    streams = Streams(session, subs)
    handshake.after_renewal(streams.restore)
    tools = ToolBook(transport.name)
    lists = Lists(session, tools)
    handshake.on_renewed(lists.cache.invalidate)  # the cached lists were the old session's
    handshake.on_renewed(router.renewed)  # then the user's on_session_renewed callbacks
    inbound = Inbound(client, session, router, subs, lists.cache)
    return Parts(handshake, session, router, subs, streams, lists, inbound, ToolCalls(session, tools, lists),
                 skills_on_demand(session, lists))


def skills_on_demand(session: Session, lists: Lists) -> Callable[[], "Skills"]:
    """The connection's skills requests, made on first use: most programs never ask for a skill, so
    neither ``import mcpsync`` nor ``connect`` loads the feature and its parsers. (Two threads may
    each make one: it holds nothing but the session and the lists.)"""
    made: List["Skills"] = []

    def skills() -> "Skills":
        if not made:
            from ._features.skills import Skills

            made.append(Skills(session, lists))
        return made[0]

    return skills


def child_transport(inherited: Transport) -> Transport:
    """In a forked child: a new, unopened copy of ``inherited`` when it has settings, else ``inherited``
    itself (unopened, it is usable here; opened in the parent, it raises ForkedError on use)."""
    if inherited.settings() is None:
        return inherited
    return inherited.replica()


def connector(client: Any) -> Callable[[], None]:
    """The session's first-use step for a client that should connect then: ``client.connect()``
    (held weakly: the session must not keep its client alive)."""
    ref = weakref.ref(client)

    def connect() -> None:
        target = ref()
        if target is not None:
            target.connect()

    return connect


def forked_first_use(client: Any, parent_pid: int) -> Callable[[], None]:
    """The first-use step of a client connected in the parent, in a forked child: reconnect, or
    (``after_fork="raise"``) raise :class:`~mcpsync.ForkedError` saying what to do."""
    if client.after_fork == "reconnect":
        return connector(client)
    name = client.name

    def refuse() -> None:
        raise ForkedError(
            f"Transport closed: client {name!r} was connected by process {parent_pid} and inherited by this "
            "forked process; it was built with after_fork='raise', so it does not reconnect by itself. Call "
            "client.connect() to open a connection of this process's own, build a new client here (for "
            "example in the pool's initializer), or leave after_fork at its default 'reconnect'")

    return refuse


def pickled_options(client: Any, log_level: Optional[str]) -> Dict[str, Any]:
    """The constructor options ``client`` pickles with.

    Raises:
        TypeError: a handler cannot be pickled (the message names it and says what to do).
    """
    options = {name: getattr(client, name) for name in _OPTIONS}
    options["log_level"] = log_level
    for name in _HANDLERS:
        require_picklable(f"client {client.name!r}", name, options[name])
    return options


def require_picklable(owner: str, name: str, value: Any) -> None:
    """Raise TypeError naming ``name`` (an option of ``owner``) when ``value`` cannot be pickled."""
    if value is None:
        return
    import pickle  # only while pickling: keeps `import mcpsync` light

    try:
        pickle.dumps(value)
    except Exception as exc:
        raise TypeError(
            f"Cannot pickle {owner}: its {name} {value!r} cannot be pickled ({exc}). Give a function defined "
            "at module level (not a lambda, closure or nested function), or build it in the worker process "
            "instead of sending it there") from exc


def manager_refused() -> str:
    """The text of the ForkedError a manager built with ``after_fork="raise"`` raises in a forked child."""
    return ("Transport closed: this manager was started by another process and inherited by this forked one; it "
            "was built with after_fork='raise', so it does not start its servers here by itself. Call "
            "connect_all() to start them in this process, build a new Manager here, or leave after_fork at its "
            "default 'reconnect'")
