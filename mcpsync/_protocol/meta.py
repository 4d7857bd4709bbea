"""The reserved ``_meta`` keys of 2026-07-28 requests and results, and the extension ids.

Constants only: no I/O, no threads.
"""

from __future__ import annotations

PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
#: Stamped on every message of a ``subscriptions/listen`` stream: the listen request's id.
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: The tasks extension of 2026-07-28 (``modelcontextprotocol/ext-tasks``).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: The skills extension (SEP-2640, ``modelcontextprotocol/ext-skills``): ``skills/list``, ``skills/get``.
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
