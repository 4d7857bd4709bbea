"""One room per MCP feature, named after the spec's sections, each over the session.

- :mod:`.tools`      ``tools/call`` end to end: fast path, header plans, tasks, the result, its limit
- :mod:`.toolbook`   what a call must know of the tools (definitions, header plans, task support)
- :mod:`.lists`      ``tools/list``, ``resources/list``, ``prompts/list``: pages and caches
- :mod:`.utilities`  ``ping``, ``completion/complete``, ``logging/setLevel``
- :mod:`.skills`     the skills extension (``skills/list``, ``skills/get``), with :mod:`.frontmatter`
- :mod:`.spill`      output limits, applied to a tool result over its cap

The client (:mod:`mcpsync.client`) holds one of each and delegates; the public handles
(:mod:`mcpsync.tasks`, :mod:`mcpsync.subscriptions`) and the session are below.
"""
