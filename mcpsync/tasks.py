"""Tasks: tool calls that run in the background on the server, behind one :class:`Task` handle.

::

    task = client.call_tool("render", {"scene": 3}, task=True)
    print(task.id, task.status())
    result = task.result(timeout=600)     # waits, polling at the server's pace

This is the public path of the handle and its state; the code is the tasks room,
:mod:`mcpsync._features.tasks`, which says how both eras' tasks work (2025-11-25's
``tasks/get``, ``tasks/result`` and ``tasks/cancel``; the 2026-07-28 tasks extension's
inline results and ``tasks/update``).
"""

from __future__ import annotations

from typing import Optional  # noqa: F401  (TaskInfo's annotations are read here: see below)

from ._features.tasks import Task, TaskInfo
from .types import _Field  # noqa: F401  (the same)
# Names this module had before the code moved to the tasks room, kept importable.
from ._features.tasks import DEFAULT_POLL_INTERVAL as DEFAULT_POLL_INTERVAL
from ._features.tasks import MAX_POLL_INTERVAL as MAX_POLL_INTERVAL
from ._features.tasks import TERMINAL as TERMINAL

__all__ = ["Task", "TaskInfo"]

# The handles keep the public path they had before the move (in reprs, pickles and docs); TaskInfo's
# field annotations are then read in this module's names (typing.get_type_hints), hence two imports.
for _value in (Task, TaskInfo):
    _value.__module__ = __name__
del _value
