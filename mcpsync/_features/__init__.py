"""One room per MCP feature, named after the spec's sections, each over the session.

- :mod:`.tools`      ``tools/call`` end to end: limits, retries, fast path, header plans, tasks, the result
- :mod:`.toolbook`   what a call must know of the tools (definitions, header plans, task support)
- :mod:`.lists`      every paged list: paging (bounded), the era's list cache, the tool screen
- :mod:`.resources`  ``resources/list``, ``resources/templates/list``, ``resources/read``, subscribing, with
  :mod:`.subscriptions` (the :class:`~mcpsync.Subscription` handle, the modern listen streams)
- :mod:`.prompts`    ``prompts/list``, ``prompts/get``
- :mod:`.tasks`      the :class:`~mcpsync.Task` handle (both eras' task protocols) and ``tasks/list``
- :mod:`.utilities`  ``ping``, ``completion/complete``, ``logging/setLevel``
- :mod:`.skills`     the skills extension (``skills/list``, ``skills/get``), with :mod:`.frontmatter`
- :mod:`.spill`      output limits, applied to a tool result over its cap

The client (:mod:`mcpsync.client`) holds one of each and delegates; the session is below.
The public paths of the handles a call returns (:mod:`mcpsync.tasks`, :mod:`mcpsync.subscriptions`)
are above: they re-export from the rooms.
"""
