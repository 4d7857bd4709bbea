"""The prompts room: ``prompts/list`` (all pages, through the list cache) and ``prompts/get``.

Threads: any thread may call these; each blocks for its own requests.
"""

from __future__ import annotations

from typing import List, Mapping, Optional

from .._protocol.methods import PROMPTS_GET, PROMPTS_LIST
from .._rpc.jsonrpc import JSONObject
from .._rpc.options import CallOptions
from .._session.session import Session
from ..types import GetPromptResult, Prompt
from .lists import Lists

__all__ = ["get", "list_prompts"]


def list_prompts(session: Session, lists: Lists, refresh: bool, options: CallOptions) -> List[Prompt]:
    """``Client.list_prompts``: every prompt, all pages, cached like the tools.

    Raises:
        CapabilityError: the server offers no prompts.
    """
    session.require("prompts", what="list prompts")
    return lists.cached("prompts", PROMPTS_LIST, "prompts", Prompt, refresh, options)


def get(session: Session, name: str, arguments: Optional[Mapping[str, str]], options: CallOptions) -> GetPromptResult:
    """``Client.get_prompt``: prompt ``name`` rendered with ``arguments`` (each key and value sent as a string).

    Raises:
        CapabilityError: the server offers no prompts.
    """
    session.require("prompts", what=f"get prompt {name!r}")
    params: JSONObject = {"name": name}
    if arguments:
        params["arguments"] = {str(k): str(v) for k, v in arguments.items()}
    return GetPromptResult.from_dict(session.call(PROMPTS_GET, params, options))
