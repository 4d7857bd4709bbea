"""mcpsync.llm: tools for the OpenAI, Anthropic and Gemini SDKs (issue 15, item 14).

The definitions and result messages are checked against the SDKs' own types (their
``*Param`` TypedDicts through pydantic, and their models' ``model_validate``), and the
tool calls are the SDKs' own objects; no network, no model. Servers: a FakeServer in
memory, and a Manager of two FakeServers over stdio.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from typing import Any, Dict, List, get_type_hints

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcpsync
from mcpsync.exceptions import TransportClosed
from mcpsync.llm import Toolbox, run, tools
from mcpsync.llm._gemini_schema import parameters
from mcpsync.llm._names import PARAMETER_NAME, NameMap, safe_name
from mcpsync.manager import Manager
from mcpsync.testing import FakeServer

from ..conftest import server_argv

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
genai_types = pytest.importorskip("google.genai.types")
pydantic = pytest.importorskip("pydantic")

from anthropic.types import ToolParam, ToolResultBlockParam, ToolUseBlock  # noqa: E402
from openai.types.chat import (  # noqa: E402
    ChatCompletionFunctionToolParam, ChatCompletionMessageFunctionToolCall, ChatCompletionToolMessageParam,
)
from openai.types.responses import FunctionTool, FunctionToolParam, ResponseFunctionToolCall  # noqa: E402
from openai.types.responses.response_input_param import FunctionCallOutput  # noqa: E402

APIS = ["openai-chat", "openai-responses", "anthropic", "gemini"]
NAME_RULE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}\Z")  # \Z: "$" also matches before a final newline
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nnot really a png").decode("ascii")
LONG = "a_tool_whose_name_is_much_longer_than_sixty_four_characters_allow_it_says"

# A schema with much of what Gemini refuses: $schema, $defs/$ref (one recursive), union type
# lists, const, oneOf, allOf, an integer enum, a format it does not take, additionalProperties,
# a parameter name with a dash.
AWKWARD_SCHEMA: Dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "Place": {"type": "object", "properties": {"city": {"type": "string"}, "near": {"$ref": "#/$defs/Place"}},
                  "required": ["city"], "additionalProperties": False},
    },
    "properties": {
        "place": {"$ref": "#/$defs/Place", "description": "Where."},
        "when": {"type": ["string", "null"], "format": "date-time"},
        "mode": {"const": "fast"},
        "level": {"type": "integer", "enum": [1, 2, 3]},
        "id": {"oneOf": [{"type": "string", "format": "uuid"}, {"type": "integer"}]},
        "either": {"type": ["string", "number"]},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "minItems": 1},
        "extra": {"type": "object", "additionalProperties": {"type": "string"}},
        "both": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                           {"properties": {"b": {"type": "boolean"}}}]},
        "page-size": {"type": "integer", "exclusiveMinimum": 0, "default": 10},
    },
    "required": ["place", "page-size"],
    "additionalProperties": False,
}


def make_server() -> FakeServer:
    server = FakeServer("llm-tools")

    @server.tool()
    def add(a: int, b: int) -> dict:
        """Add two integers."""
        return {"sum": a + b}

    @server.tool(name="weather.today", description="Today's weather.")
    def weather(city: str) -> str:
        return f"sunny in {city}"

    @server.tool(name="get weather")
    def get_weather(city: str) -> str:
        return f"rain in {city}"

    @server.tool(name="météo", description="La météo.")
    def meteo() -> str:
        return "beau"

    @server.tool(name=LONG)
    def long_one() -> str:
        return "long"

    @server.tool(name="awkward", description="Takes everything.", input_schema=AWKWARD_SCHEMA)
    def awkward(**arguments: Any) -> dict:
        return {"got": arguments}

    @server.tool()
    def picture() -> list:
        """Draw a picture."""
        return [{"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "text", "text": "a picture"},
                {"type": "audio", "data": PNG, "mimeType": "audio/wav"}]

    @server.tool()
    def documents() -> list:
        """Embedded and linked resources."""
        return [{"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "A"}},
                {"type": "resource", "resource": {"uri": "file:///b.png", "mimeType": "image/png", "blob": PNG}},
                {"type": "resource", "resource": {"uri": "file:///c.zip", "mimeType": "application/zip",
                                                  "blob": PNG}},
                {"type": "resource_link", "uri": "file:///d.md", "name": "d"}]

    @server.tool()
    def fails() -> str:
        """Always fails."""
        raise ValueError("the disk is full")

    @server.tool()
    def refused() -> str:
        """The server answers with a JSON-RPC error."""
        raise mcpsync.MCPError(-32602, "quota exceeded")

    @server.tool()
    def dies() -> str:
        """Never answers: the server crashes first."""
        return "never"

    server.crash_at(1, tool="dies")
    return server


@pytest.fixture
def client():
    server = make_server()
    with server, server.client() as connected:
        yield connected


def adapt(typed_dict: Any, value: Any) -> None:
    """``value`` validates as the SDK's TypedDict and has no key the TypedDict lacks."""
    pydantic.TypeAdapter(typed_dict).validate_python(value)
    extra = set(value) - set(get_type_hints(typed_dict))
    assert not extra, f"keys {extra} are not in {typed_dict.__name__}"


def by_name(defs: List[Dict[str, Any]], api: str) -> Dict[str, Dict[str, Any]]:
    if api == "gemini":
        return {d["name"]: d for d in defs[0]["function_declarations"]}
    if api == "openai-chat":
        return {d["function"]["name"]: d for d in defs}
    return {d["name"]: d for d in defs}


# -- names --------------------------------------------------------------------------------------


def test_names_that_fit_are_kept_and_others_get_a_stable_hashed_name() -> None:
    assert safe_name("add") == "add"
    assert safe_name("weather.today") == safe_name("weather.today")
    assert safe_name("weather.today").startswith("weather_today_")
    assert safe_name("météo").startswith("meteo_")
    assert safe_name("天气").startswith("tool_")
    assert safe_name("1st").startswith("t_1st_")
    assert len(safe_name(LONG)) == 64
    for name in ("weather.today", "get weather", "météo", "天气", LONG, "-x", "a/b:c"):
        assert NAME_RULE.match(safe_name(name)), name
    assert safe_name("a.b") != safe_name("a b")  # same cleaned text, different hashes


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=90), min_size=1, max_size=12, unique=True))
def test_any_set_of_names_maps_one_to_one_onto_names_every_api_accepts(wanted: List[str]) -> None:
    names = NameMap((name, name) for name in wanted)
    mapped = names.names()
    assert len(set(mapped)) == len(wanted)
    assert all(NAME_RULE.match(name) for name in mapped)
    assert [names.get(name) for name in mapped] == wanted  # back to the exact tool, in the order given
    assert all(safe_name(name) == name for name in wanted if NAME_RULE.match(name))


@pytest.mark.parametrize("api", APIS)
def test_every_listed_name_fits_and_maps_back_to_the_exact_tool(client, api: str) -> None:
    toolbox = Toolbox(client, api)
    listed = by_name(toolbox.tools(), api)
    assert all(NAME_RULE.match(name) for name in listed)
    mcp_names = {tool.name for tool in client.list_tools()}
    assert {toolbox.resolve(name)[1] for name in listed} == mcp_names
    assert "add" in listed and toolbox.resolve("add") == (None, "add")
    assert toolbox.names() == Toolbox(client, "gemini").names()  # one name per tool, whatever the API


# -- the definitions, against the SDKs' types ---------------------------------------------------


def test_openai_chat_definitions_are_chat_completion_tool_params(client) -> None:
    defs = tools(client, "openai-chat")
    for definition in defs:
        adapt(ChatCompletionFunctionToolParam, definition)
        openai.types.chat.ChatCompletionFunctionTool.model_validate(definition)
    add = by_name(defs, "openai-chat")["add"]["function"]
    assert add["description"] == "Add two integers."
    assert add["parameters"]["required"] == ["a", "b"]


def test_openai_responses_definitions_are_function_tools_and_not_strict(client) -> None:
    for definition in tools(client, "openai-responses"):
        adapt(FunctionToolParam, definition)
        assert FunctionTool.model_validate(definition).strict is False


def test_anthropic_definitions_are_tool_params(client) -> None:
    defs = tools(client, "anthropic")
    for definition in defs:
        adapt(ToolParam, definition)
        assert definition["input_schema"]["type"] == "object"
    assert by_name(defs, "anthropic")["awkward"]["input_schema"]["$defs"]  # JSON Schema is taken whole


def test_gemini_definitions_validate_as_a_genai_tool(client) -> None:
    defs = tools(client, "gemini")
    assert len(defs) == 1
    tool = genai_types.Tool.model_validate(defs[0])
    declarations = {d.name: d for d in tool.function_declarations}
    assert declarations["add"].parameters.type == genai_types.Type.OBJECT
    assert declarations["meteo_" + safe_name("météo").split("_")[1]].parameters is None  # no parameters: unset


def _keys(schema: Any) -> set:
    """Every key used anywhere in a translated schema (property names excepted)."""
    found = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            found.add(key)
            if key == "properties":
                for sub in value.values():
                    found |= _keys(sub)
            elif key in ("items",):
                found |= _keys(value)
            elif key == "any_of":
                for sub in value:
                    found |= _keys(sub)
    return found


GEMINI_KEYS = {"type", "title", "description", "nullable", "default", "example", "enum", "format", "min_length",
               "max_length", "pattern", "minimum", "maximum", "items", "min_items", "max_items", "properties",
               "required", "property_ordering", "min_properties", "max_properties", "any_of"}


def test_a_schema_gemini_refuses_is_translated_into_its_subset() -> None:
    out = parameters({**AWKWARD_SCHEMA, "required": ["place", "page-size", "ghost"]})
    assert out is not None
    genai_types.Schema.model_validate(out)
    assert _keys(out) <= GEMINI_KEYS
    props = out["properties"]
    assert set(props) == {"place", "when", "mode", "level", "id", "either", "tags", "extra", "both",
                          safe_name("page-size", PARAMETER_NAME)}
    place = props["place"]  # $ref inlined, the description of the referring schema kept
    assert place["type"] == "OBJECT" and place["description"] == "Where." and place["required"] == ["city"]
    assert "recursive reference" in place["properties"]["near"]["description"]
    assert place["properties"]["near"]["type"] == "OBJECT"
    assert props["when"] == {"type": "STRING", "format": "date-time", "nullable": True}
    assert props["mode"] == {"type": "STRING", "enum": ["fast"], "format": "enum"}
    assert props["level"]["type"] == "INTEGER" and "enum" not in props["level"]
    assert "one of: 1, 2, 3" in props["level"]["description"]
    assert [b["type"] for b in props["id"]["any_of"]] == ["STRING", "INTEGER"]
    assert "format: uuid" in props["id"]["any_of"][0]["description"]
    assert [b["type"] for b in props["either"]["any_of"]] == ["STRING", "NUMBER"]
    assert props["tags"] == {"type": "ARRAY", "items": {"type": "STRING"}, "min_items": 1}
    assert props["extra"] == {"type": "OBJECT"}
    assert set(props["both"]["properties"]) == {"a", "b"} and props["both"]["required"] == ["a"]
    renamed = [name for name in props if name.startswith("page_size")][0]
    assert props[renamed]["minimum"] == 0 and props[renamed]["default"] == 10
    assert out["required"] == ["place", renamed]  # "ghost" is no property: left out
    assert out["property_ordering"][0] == "place"


def test_gemini_leaves_out_the_parameters_of_a_tool_that_takes_none() -> None:
    assert parameters({"type": "object"}) is None
    assert parameters({"type": "object", "properties": {}, "additionalProperties": False}) is None


# -- running the SDKs' own tool-call objects ----------------------------------------------------


def chat_call(name: str, arguments: str, call_id: str = "call_1") -> Any:
    return ChatCompletionMessageFunctionToolCall(id=call_id, type="function",
                                                 function={"name": name, "arguments": arguments})


def test_openai_chat_runs_a_tool_call_and_answers_with_a_tool_message(client) -> None:
    toolbox = Toolbox(client, "openai-chat")
    message = toolbox.run(chat_call("add", '{"a": 2, "b": 40}'))
    adapt(ChatCompletionToolMessageParam, message)
    assert message == {"role": "tool", "tool_call_id": "call_1", "content": '{"sum": 42}'}
    as_dict = toolbox.run(chat_call("add", '{"a": 1, "b": 1}').model_dump())
    assert json.loads(as_dict["content"]) == {"sum": 2}


def test_a_mapped_name_runs_the_exact_tool(client) -> None:
    toolbox = Toolbox(client, "openai-chat")
    names = {mcp: name for name, (_, mcp) in toolbox.names().items()}
    assert toolbox.run(chat_call(names["weather.today"], '{"city": "Oslo"}'))["content"] == "sunny in Oslo"
    assert toolbox.run(chat_call(names["get weather"], '{"city": "Oslo"}'))["content"] == "rain in Oslo"
    assert toolbox.run(chat_call(names["météo"], ""))["content"] == "beau"
    assert toolbox.run(chat_call(names[LONG], "{}"))["content"] == "long"


def test_openai_responses_runs_a_function_call_and_carries_an_image(client) -> None:
    toolbox = Toolbox(client, "openai-responses")
    call = ResponseFunctionToolCall(arguments="{}", call_id="fc_1", name="picture", type="function_call")
    item = toolbox.run(call)
    adapt(FunctionCallOutput, item)
    assert item["call_id"] == "fc_1"
    output = item["output"]
    assert output[0] == {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}
    assert output[1] == {"type": "input_text", "text": "a picture"}
    assert "audio/wav" in output[2]["text"] and "omitted" in output[2]["text"]
    plain = toolbox.run(ResponseFunctionToolCall(arguments='{"a": 1, "b": 2}', call_id="fc_2", name="add",
                                                 type="function_call"))
    assert plain["output"] == '{"sum": 3}'


def test_openai_chat_drops_an_image_for_a_note(client) -> None:
    content = Toolbox(client, "openai-chat").run(chat_call("picture", "{}"))["content"]
    assert "image (image/png) omitted" in content and "a picture" in content


def test_anthropic_runs_a_tool_use_block_and_answers_with_a_tool_result(client) -> None:
    toolbox = Toolbox(client, "anthropic")
    block = toolbox.run(ToolUseBlock(id="toolu_1", name="picture", input={}, type="tool_use"))
    adapt(ToolResultBlockParam, block)
    assert block["tool_use_id"] == "toolu_1" and block["is_error"] is False
    assert block["content"][0] == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                               "data": PNG}}
    assert block["content"][1] == {"type": "text", "text": "a picture"}
    # the block goes in a user message
    pydantic.TypeAdapter(anthropic.types.MessageParam).validate_python({"role": "user", "content": [block]})


def test_resources_become_text_images_and_notes(client) -> None:
    block = Toolbox(client, "anthropic").run(ToolUseBlock(id="t", name="documents", input={}, type="tool_use"))
    adapt(ToolResultBlockParam, block)
    first, image, zipped, link = block["content"]
    assert first == {"type": "text", "text": "[resource file:///a.txt]\nA"}
    assert image["type"] == "image" and image["source"]["data"] == PNG
    assert zipped["text"] == "[resource file:///c.zip (application/zip) omitted: not accepted here]"
    assert link["text"] == "[resource link: d file:///d.md]"


def test_anthropic_maps_is_error(client) -> None:
    block = Toolbox(client, "anthropic").run(ToolUseBlock(id="t", name="fails", input={}, type="tool_use"))
    assert block["is_error"] is True and "the disk is full" in block["content"][0]["text"]


def test_gemini_runs_a_function_call_and_a_part(client) -> None:
    toolbox = Toolbox(client, "gemini")
    part = toolbox.run(genai_types.FunctionCall(name="add", args={"a": 2, "b": 3}, id="fc-9"))
    validated = genai_types.Part.model_validate(part)
    assert validated.function_response.response == {"output": {"sum": 5}}
    assert validated.function_response.id == "fc-9" and validated.function_response.name == "add"
    from_part = toolbox.run(genai_types.Part(function_call=genai_types.FunctionCall(name="picture", args={})))
    response = genai_types.Part.model_validate(from_part).function_response
    assert response.parts[0].inline_data.mime_type == "image/png"
    assert response.parts[0].inline_data.data == base64.b64decode(PNG)
    assert "a picture" in response.response["output"]
    genai_types.Content.model_validate({"role": "user", "parts": [from_part]})


def test_gemini_renames_a_parameter_and_maps_the_argument_back(client) -> None:
    toolbox = Toolbox(client, "gemini")
    declared = by_name(toolbox.tools(), "gemini")["awkward"]["parameters"]["properties"]
    renamed = [name for name in declared if name.startswith("page_size")][0]
    part = toolbox.run(genai_types.FunctionCall(name="awkward", args={"place": {"city": "Oslo"}, renamed: 5}))
    assert part["function_response"]["response"]["output"]["got"] == {"place": {"city": "Oslo"}, "page-size": 5}


# -- what the model got wrong, what the tool got wrong, what failed -----------------------------


@pytest.mark.parametrize("api, call", [
    ("openai-chat", {"id": "c", "type": "function", "function": {"name": "add", "arguments": "{not json"}}),
    ("openai-responses", {"type": "function_call", "call_id": "c", "name": "add", "arguments": "[1, 2]"}),
    ("anthropic", {"type": "tool_use", "id": "c", "name": "add", "input": "{oops"}),
])
def test_bad_arguments_give_an_error_result_and_call_nothing(api: str, call: Dict[str, Any]) -> None:
    server = make_server()
    with server, server.client() as connected:
        message = run(connected, call, api)
        server.assert_tool_not_called("add")
    text = json.dumps(message)
    assert "was not called" in text and ("not valid JSON" in text or "must be a JSON object" in text)
    if api == "anthropic":
        assert message["is_error"] is True


@pytest.mark.parametrize("api", APIS)
def test_an_unknown_tool_gives_an_error_result_that_lists_the_tools(client, api: str) -> None:
    calls = {"openai-chat": chat_call("nope", "{}"),
             "openai-responses": ResponseFunctionToolCall(arguments="{}", call_id="c", name="nope",
                                                          type="function_call"),
             "anthropic": ToolUseBlock(id="c", name="nope", input={}, type="tool_use"),
             "gemini": genai_types.FunctionCall(name="nope", args={})}
    text = json.dumps(Toolbox(client, api).run(calls[api]))
    assert "no tool named 'nope'" in text and "add" in text


def test_an_error_result_and_a_refusal_reach_the_model(client) -> None:
    toolbox = Toolbox(client, "openai-chat")
    assert toolbox.run(chat_call("fails", "{}"))["content"] == "Error: the disk is full"
    refused = toolbox.run(chat_call("refused", "{}"))["content"]
    assert refused.startswith("Error: the server refused the call") and "quota exceeded" in refused
    wrong = toolbox.run(chat_call("add", '{"a": "two"}'))["content"]
    assert wrong.startswith("Error")
    gemini = Toolbox(client, "gemini").run(genai_types.FunctionCall(name="fails", args={}))
    assert gemini["function_response"]["response"] == {"error": "the disk is full"}


def test_a_transport_failure_raises(client) -> None:
    with pytest.raises(TransportClosed):
        Toolbox(client, "anthropic").run(ToolUseBlock(id="c", name="dies", input={}, type="tool_use"))


def test_an_object_that_is_no_tool_call_raises_type_error(client) -> None:
    with pytest.raises(TypeError, match="tool_use"):
        Toolbox(client, "anthropic").run({"type": "text", "text": "hi"})
    with pytest.raises(ValueError, match="unknown api"):
        Toolbox(client, "openai")  # type: ignore[arg-type]


def test_a_tool_added_after_listing_is_found_by_run() -> None:
    server = make_server()
    with server, server.client() as connected:
        toolbox = Toolbox(connected, "openai-chat")
        toolbox.tools()

        @server.tool(name="late.tool")
        def late() -> str:
            return "late"

        message = toolbox.run(chat_call(safe_name("late.tool"), "{}"))
        assert message["content"] == "late"


def test_one_toolbox_serves_many_threads(client) -> None:
    toolbox = Toolbox(client, "openai-chat")
    results: List[str] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        content = toolbox.run(chat_call("add", json.dumps({"a": n, "b": n})))["content"]
        with lock:
            results.append(content)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(json.loads(r)["sum"] for r in results) == [2 * n for n in range(8)]


# -- a Manager of two servers -------------------------------------------------------------------


def stdio(script: str, *args: str) -> Dict[str, Any]:
    argv = server_argv(script, *args)
    return {"command": argv[0], "args": argv[1:]}


@pytest.fixture
def manager(tmp_path):
    config = {"mcpServers": {"alpha": stdio("llm_tools_server.py", "alpha"),
                             "beta": stdio("llm_tools_server.py", "beta")}}
    with Manager(config, cache=tmp_path / "cache") as managed:
        assert managed.wait(30)
        yield managed


def test_a_manager_s_tools_keep_their_qualified_names_and_map_to_server_and_tool(manager) -> None:
    toolbox = Toolbox(manager, "anthropic")
    listed = by_name(toolbox.tools(), "anthropic")
    assert set(listed) == {"mcp_alpha_echo", "mcp_alpha_alpha_lookup", "mcp_beta_echo", "mcp_beta_beta_lookup"}
    for definition in listed.values():
        adapt(ToolParam, definition)
    assert toolbox.resolve("mcp_beta_beta_lookup") == ("beta", "beta.lookup")
    block = toolbox.run(ToolUseBlock(id="t1", name="mcp_beta_echo", input={"text": "hi"}, type="tool_use"))
    assert block["content"] == [{"type": "text", "text": "beta: hi"}]


def test_a_manager_runs_gemini_calls_on_the_right_server_with_renamed_arguments(manager) -> None:
    toolbox = Toolbox(manager, "gemini")
    tool = genai_types.Tool.model_validate(toolbox.tools()[0])
    lookup = [d for d in tool.function_declarations if d.name == "mcp_alpha_alpha_lookup"][0]
    (parameter,) = lookup.parameters.properties
    assert parameter != "key-name" and parameter.startswith("key_name_")
    part = toolbox.run(genai_types.FunctionCall(name="mcp_alpha_alpha_lookup", args={parameter: "k"}))
    assert part["function_response"]["response"]["output"] == {"server": "alpha", "key": "k"}
    chat = Toolbox(manager, "openai-chat").run(chat_call("mcp_beta_echo", '{"text": "x"}'))
    assert chat["content"] == "beta: x"


# -- the examples run offline -------------------------------------------------------------------


@pytest.mark.parametrize("script, expected", [
    ("llm_openai.py", "'tool_call_id': 'call_1'"),
    ("llm_anthropic.py", "'tool_use_id': 'toolu_1'"),
    ("llm_gemini.py", "'output': {'sum': 42}"),
])
def test_the_llm_examples_run(script: str, expected: str) -> None:
    import os
    import subprocess
    import sys

    from ..conftest import ROOT

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    done = subprocess.run([sys.executable, str(ROOT / "examples" / script)], capture_output=True, text=True,
                          timeout=60, cwd=ROOT / "examples", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert expected in done.stdout


def _doubling_chain(levels: int, key: str) -> Dict[str, Any]:
    """Definitions each naming the next twice: expanded naively, 2**levels schemas."""
    defs: Dict[str, Any] = {}
    for i in range(levels):
        here = [{"$ref": f"#/$defs/D{i + 1}"}, {"$ref": f"#/$defs/D{i + 1}"}]
        defs[f"D{i}"] = ({"allOf": here} if key == "allOf"
                         else {"type": "object", "properties": {"a": here[0], "b": here[1]}})
    defs[f"D{levels}"] = {"type": "object", "properties": {"k": {"type": "string"}}}
    return {"type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/D0"}}}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("schema", [
    # a reference back to the root through allOf, inside items: it used to recurse until RecursionError
    {"type": "object", "properties": {"x": {"type": "array", "items": {"allOf": [{"$ref": "#"}]}}}},
    {"type": "object", "properties": {"x": {"allOf": [{"$ref": "#/properties/x"}, {"type": "string"}]}}},
    # a chain of definitions that doubles at each level: it used to expand 2**40 schemas (a hang)
    _doubling_chain(40, "properties"),
    _doubling_chain(40, "allOf"),
], ids=["allOf-root-in-items", "allOf-self", "doubling-properties", "doubling-allOf"])
def test_a_hostile_schema_becomes_a_bounded_gemini_schema(schema: Dict[str, Any]) -> None:
    out = parameters(schema)
    assert out is not None
    genai_types.Schema.model_validate(out)
    assert _keys(out) <= GEMINI_KEYS
    assert len(json.dumps(out)) < 2_000_000
