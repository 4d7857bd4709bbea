"""The resources room: ``resources/list``, ``resources/templates/list``, ``resources/read`` and subscriptions.

Lists go through the lists room (:class:`~mcpsync._features.lists.Lists`: pages, and the
resource list cached like the tools'); a read's unknown resource is raised as
:class:`~mcpsync.ResourceNotFound` in every era (the session's
:meth:`~mcpsync._session.session.Session.read_resource`). Subscriptions are the era's:

* Legacy: ``resources/subscribe`` and ``resources/unsubscribe``; a URI subscribed with
  :func:`subscribe_resource` is subscribed again after an HTTP session is renewed
  (:class:`~mcpsync._session.streams.Streams`).
* Modern (2026-07-28): a ``subscriptions/listen`` stream per subscription
  (:mod:`.subscriptions`, which also holds the :class:`~mcpsync.Subscription` handle).

Threads: any thread may call these; each blocks for its own requests.
"""

from __future__ import annotations

from typing import List, Optional

from .._protocol.methods import (RESOURCES_LIST, RESOURCES_SUBSCRIBE, RESOURCES_TEMPLATES_LIST,
                                 RESOURCES_UNSUBSCRIBE)
from .._rpc.options import CallOptions
from .._session.session import Session
from .._session.streams import Streams
from ..types import ReadResourceResult, Resource, ResourceTemplate
from .lists import Lists
from .subscriptions import Subscription, Subscriptions, UpdateCallback

__all__ = ["list_resources", "list_templates", "read", "subscribe", "subscribe_resource", "unsubscribe_resource"]


def list_resources(session: Session, lists: Lists, refresh: bool, options: CallOptions) -> List[Resource]:
    """``Client.list_resources``: every resource, all pages, through the list cache.

    Raises:
        CapabilityError: the server offers no resources.
    """
    session.require("resources", what="list resources")
    return lists.cached("resources", RESOURCES_LIST, "resources", Resource, refresh, options)


def list_templates(session: Session, lists: Lists, options: CallOptions) -> List[ResourceTemplate]:
    """``Client.list_resource_templates``: every resource template, all pages (never cached)."""
    session.require("resources", what="list resource templates")
    return [ResourceTemplate.from_dict(item)
            for item in lists.pages(RESOURCES_TEMPLATES_LIST, "resourceTemplates", options)]


def read(session: Session, uri: str, options: CallOptions) -> ReadResourceResult:
    """``Client.read_resource``: one ``resources/read``.

    Raises:
        ResourceNotFound: no such resource (``-32002`` or ``-32602``, in every era).
    """
    session.require("resources", what=f"read {uri!r}")
    return ReadResourceResult.from_dict(session.read_resource(uri, options))


def subscribe(session: Session, subs: Subscriptions, uri: str, callback: Optional[UpdateCallback],
              timeout: Optional[float]) -> Subscription:
    """``Client.subscribe``: a :class:`~mcpsync.Subscription` handle for updates of ``uri``.

    Raises:
        CapabilityError: the server offers no subscriptions, or did not accept this one.
    """
    session.require("resources", "subscribe", what=f"subscribe to {uri!r}")
    return subs.subscribe(uri, callback, timeout)


def subscribe_resource(session: Session, subs: Subscriptions, streams: Streams, uri: str,
                       options: CallOptions) -> None:
    """``Client.subscribe_resource``: updates of ``uri`` to the notification handlers, no handle.

    Modern: one listen stream for ``uri``, kept until :func:`unsubscribe_resource`; legacy:
    ``resources/subscribe``, restored after a renewed HTTP session.
    """
    session.require("resources", "subscribe", what=f"subscribe to {uri!r}")
    if session.modern:
        subs.hold(uri, options.timeout)
        return
    session.call(RESOURCES_SUBSCRIBE, {"uri": uri}, options)
    streams.subscribed(uri)  # restored if an HTTP session has to be renewed


def unsubscribe_resource(session: Session, subs: Subscriptions, streams: Streams, uri: str,
                         options: CallOptions) -> None:
    """``Client.unsubscribe_resource``: stop what :func:`subscribe_resource` asked for."""
    session.require("resources", "subscribe", what=f"unsubscribe from {uri!r}")
    if session.modern:
        subs.release(uri)
        return
    session.call(RESOURCES_UNSUBSCRIBE, {"uri": uri}, options)
    streams.unsubscribed(uri)
