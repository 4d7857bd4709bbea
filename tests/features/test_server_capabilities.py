"""client.server_capabilities is typed (ServerCapabilities) and still the dict it was."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any, Dict

import pytest

import mcpsync
from mcpsync import ServerCapabilities
from mcpsync.capabilities import PromptsCapability, ResourcesCapability, TasksCapability, ToolsCapability
from mcpsync.testing import FakeServer

LEGACY_WIRE = {"tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True},
               "prompts": {"listChanged": True}, "logging": {}, "completions": {}}


def _fake() -> FakeServer:
    server = FakeServer("caps")
    server.add_tool(lambda: "ok", name="ping_tool")
    server.resource("memo://today")(lambda: "milk")
    server.prompt(name="greet")(lambda: "hello")
    return server


def test_a_legacy_server_s_capabilities_are_typed() -> None:
    with _fake() as server, server.client(protocol="legacy") as client:
        caps = client.server_capabilities
        assert isinstance(caps, ServerCapabilities)
        assert isinstance(caps.tools, ToolsCapability) and caps.tools.list_changed is True
        assert isinstance(caps.resources, ResourcesCapability)
        assert caps.resources.subscribe is True and caps.resources.list_changed is True
        assert isinstance(caps.prompts, PromptsCapability) and caps.prompts.list_changed is True
        assert caps.logging is True and caps.completions is True
        assert caps.tasks is None and caps.experimental == {} and caps.extensions == {}


def test_a_modern_server_s_capabilities_are_typed_the_same_way() -> None:
    with _fake() as server, server.client(protocol="modern") as client:
        caps = client.server_capabilities
        assert isinstance(caps, ServerCapabilities) and caps == server.capabilities("modern")
        # the same flags as legacy: the changes come on subscriptions/listen streams
        assert caps.tools is not None and caps.tools.list_changed is True
        assert caps.resources is not None and caps.resources.subscribe is True
        assert caps.logging and caps.completions


def test_it_is_still_the_dict_it_was() -> None:
    with _fake() as server, server.client(protocol="legacy") as client:
        caps = client.server_capabilities
        assert caps == LEGACY_WIRE and LEGACY_WIRE == caps
        assert isinstance(caps, dict)
        assert "logging" in caps and "sampling" not in caps
        assert caps["tools"] == {"listChanged": True} and caps["tools"]["listChanged"] is True
        assert caps.get("prompts") == {"listChanged": True} and caps.get("nope") is None
        assert sorted(caps) == sorted(LEGACY_WIRE) and len(caps) == 5
        assert dict(caps.items()) == LEGACY_WIRE
        assert json.loads(json.dumps(caps)) == LEGACY_WIRE
        assert caps.to_dict() == LEGACY_WIRE and type(caps.to_dict()) is dict


def test_before_connecting_there_are_none() -> None:
    with _fake() as server:
        client = mcpsync.Client(server.transport())
        assert client.server_capabilities == {} and not client.server_capabilities
        assert isinstance(client.server_capabilities, ServerCapabilities)
        assert client.server_capabilities.tools is None and client.server_capabilities.logging is False


def test_what_the_spec_defines_in_either_era_is_read() -> None:
    wire: Dict[str, Any] = {
        "tools": {}, "resources": {"subscribe": True}, "prompts": {"listChanged": False},
        "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
        "experimental": {"acme/turbo": {"level": 3}},
        "extensions": {"io.modelcontextprotocol/skills": {}, "io.modelcontextprotocol/ui": {"mimeTypes": ["x"]}},
        "future": {"something": 1},
    }
    caps = ServerCapabilities.from_dict(wire)
    assert caps.tools is not None and not caps.tools.list_changed  # {} is offered
    assert caps.resources is not None and caps.resources.subscribe and not caps.resources.list_changed
    assert caps.prompts is not None and caps.prompts.list_changed is False
    assert isinstance(caps.tasks, TasksCapability)
    assert caps.tasks.list and caps.tasks.cancel and caps.tasks.tool_calls
    assert caps.experimental == {"acme/turbo": {"level": 3}}
    assert set(caps.extensions) == {"io.modelcontextprotocol/skills", "io.modelcontextprotocol/ui"}
    assert caps.extensions["io.modelcontextprotocol/ui"] == {"mimeTypes": ["x"]}
    assert caps.logging is False and caps.completions is False
    assert caps.to_dict() == wire  # members this version does not know are kept
    assert "future" in caps


def test_odd_wire_values_never_raise() -> None:
    caps = ServerCapabilities.from_dict({"tools": None, "resources": True, "prompts": {"listChanged": "yes"},
                                         "tasks": {"requests": []}, "extensions": ["not", "an", "object"],
                                         "experimental": {"x": 1}, "logging": None})
    assert caps.tools is None  # null is absent
    assert caps.resources is not None and caps.resources.subscribe is False  # present, but not an object
    assert caps.prompts is not None and caps.prompts.list_changed is False  # only JSON true is true
    assert caps.tasks is not None and not caps.tasks.tool_calls and not caps.tasks.list
    assert caps.extensions == {} and caps.experimental == {"x": {}} and caps.logging is False
    assert ServerCapabilities.from_dict("garbage") == {} and ServerCapabilities.from_dict(None) == {}


def test_to_dict_is_a_deep_copy_and_the_value_copies_and_pickles() -> None:
    caps = ServerCapabilities.from_dict(copy.deepcopy(LEGACY_WIRE))
    wire = caps.to_dict()
    wire["tools"]["listChanged"] = False
    assert caps.tools is not None and caps.tools.list_changed is True
    for other in (copy.deepcopy(caps), copy.copy(caps), pickle.loads(pickle.dumps(caps))):
        assert type(other) is ServerCapabilities and other == caps and other.tools is not None
    assert repr(caps).startswith("ServerCapabilities({") and "listChanged" in repr(caps)
    assert repr(caps.resources) == "ResourcesCapability(subscribe=True, list_changed=True)"


@pytest.mark.parametrize("protocol", ["legacy", "modern"])
def test_extensions_a_server_declares_gate_the_extension_calls(protocol: str) -> None:
    declared = {"tools": {}, "extensions": {"io.modelcontextprotocol/skills": {}}}
    with FakeServer("ext", capabilities=declared) as server, server.client(protocol=protocol) as client:
        assert "io.modelcontextprotocol/skills" in client.server_capabilities.extensions
    with FakeServer("plain", capabilities={"tools": {}}) as server, server.client(protocol=protocol) as client:
        with pytest.raises(mcpsync.CapabilityError, match="io.modelcontextprotocol/skills"):
            client.list_skills()
