"""Resource subscriptions: :class:`Subscription`, one API over both eras.

``client.subscribe(uri, callback)`` returns a :class:`Subscription`;
``callback(updated_uri)`` runs (on the client's dispatcher thread) for every
``notifications/resources/updated`` about ``uri`` or a resource below it,
until ``subscription.close()``.

This is the handle's public path; the code is the resources room's
(:mod:`mcpsync._features.subscriptions`), which says how each era subscribes.
"""

from __future__ import annotations

from ._features.subscriptions import Subscription
# Names this module had before the code moved to the resources room, kept importable.
from ._features.subscriptions import ACKNOWLEDGED as ACKNOWLEDGED
from ._features.subscriptions import LIST_CHANGED_FLAGS as LIST_CHANGED_FLAGS
from ._features.subscriptions import UPDATED as UPDATED
from ._features.subscriptions import Subscriptions as Subscriptions
from ._features.subscriptions import UpdateCallback as UpdateCallback
from ._features.subscriptions import covers as covers

__all__ = ["Subscription"]

# The handle keeps the public path it had before the move (in reprs, pickles and docs).
Subscription.__module__ = __name__
