"""The glue client the conformance harness runs: ``python -m tests.conformance.client <server-url>``.

The harness (``@modelcontextprotocol/conformance``) starts a mock server for
one scenario, then runs this program with the server's URL as the last
argument, the scenario's name in ``MCP_CONFORMANCE_SCENARIO``, the protocol
version it wants in ``MCP_CONFORMANCE_PROTOCOL_VERSION`` and, for some
scenarios, credentials in ``MCP_CONFORMANCE_CONTEXT`` (a JSON object).

It uses mcpsync's public API only and does what an application would do:
pick an auth object from the context, connect, list the skills and load the
first (when the server declares the skills extension), list the tools and call
each one with arguments made from its input schema. The one thing it plays itself
is the person at the browser: the harness's authorization servers approve at
once, so "logging in" is following the authorization URL to its redirect.
Anything more a scenario needs belongs in mcpsync, not here.

Exit status: 0 when the session ran to its end, 1 with the error on stderr.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any, Dict, List, Mapping, Optional, Tuple

import requests

import mcpsync
from mcpsync.auth import ClientCredentials, EnterpriseAuth, MemoryTokenStore, OAuth, WorkloadIdentity

CIMD_URL = "https://conformance-test.local/client-metadata.json"  # the id the harness expects in auth/basic-cimd


def follow_login(authorization_url: str) -> str:
    """The person's part: the mock authorization server redirects at once; return where it sends the browser."""
    response = requests.get(authorization_url, allow_redirects=False, timeout=10)
    location = response.headers.get("Location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise RuntimeError(f"the authorization endpoint answered {response.status_code} without a redirect")
    return location


def auth_for(scenario: str, context: Mapping[str, Any]) -> Optional[requests.auth.AuthBase]:
    """The auth object an application would configure for this scenario's server."""
    if not scenario.startswith("auth/"):
        return None
    store = MemoryTokenStore()
    client_id = context.get("client_id")
    if "idp_token_endpoint" in context:  # enterprise-managed authorization (ID-JAG)
        return EnterpriseAuth(str(client_id), client_secret=context.get("client_secret"),
                              idp_token_endpoint=str(context["idp_token_endpoint"]),
                              id_token=str(context["idp_id_token"]), idp_client_id=context.get("idp_client_id"),
                              store=store)
    if "valid_jwt" in context:  # workload identity federation: the platform's token
        return WorkloadIdentity(token=str(context["valid_jwt"]), client_id=context.get("client_id"), store=store)
    if scenario.startswith("auth/client-credentials"):
        if "private_key_pem" in context:
            return ClientCredentials(str(client_id), private_key=context["private_key_pem"],
                                     algorithm=str(context.get("signing_algorithm", "ES256")), store=store)
        return ClientCredentials(str(client_id), client_secret=str(context["client_secret"]), store=store)
    if isinstance(client_id, str) and isinstance(context.get("client_secret"), str) \
            and scenario == "auth/pre-registration":
        return OAuth(client_id=client_id, client_secret=context["client_secret"], login=follow_login, store=store)
    # DPoP is the application's opt-in; the dpop scenarios test it.
    return OAuth(client_metadata_url=CIMD_URL, login=follow_login, store=store,
                 dpop=scenario.startswith("auth/dpop"))


def answer_elicitation(params: mcpsync.ElicitParams) -> Dict[str, Any]:
    """Accept every form, leaving each field to the default the schema gives."""
    return {"action": "accept", "content": {}}


def example_arguments(schema: Mapping[str, Any]) -> Dict[str, Any]:
    """Arguments that satisfy a simple object schema (numbers, strings, booleans, enums)."""
    arguments: Dict[str, Any] = {}
    properties = schema.get("properties") or {}
    for name, spec in properties.items():
        spec = spec if isinstance(spec, dict) else {}
        kind = spec.get("type")
        if "enum" in spec and spec["enum"]:
            arguments[name] = spec["enum"][0]
        elif kind in ("number", "integer"):
            arguments[name] = 2 if name == "b" else 1
        elif kind == "boolean":
            arguments[name] = True
        elif kind == "array":
            arguments[name] = []
        elif kind == "object":
            arguments[name] = {}
        else:
            arguments[name] = "test"
    return arguments


def planned_calls(tools: List[mcpsync.Tool], context: Mapping[str, Any]) -> List[Tuple[str, Dict[str, Any]]]:
    """The tool calls to make: the ones the scenario's context lists, else one call per tool.

    A tool taking a ``schema`` object is an echo tool: it is given another
    tool's input schema exactly as mcpsync handed it over (schema preservation).
    """
    listed = context.get("toolCalls")
    if isinstance(listed, list):
        return [(str(call["name"]), dict(call.get("arguments") or {})) for call in listed if isinstance(call, dict)]
    calls = []
    for tool in tools:
        schema = tool.input_schema or {}
        if (schema.get("properties") or {}).get("schema", {}).get("type") == "object":
            others = [t for t in tools if t.name != tool.name]
            calls.append((tool.name, {"schema": others[0].input_schema if others else {}}))
        else:
            calls.append((tool.name, example_arguments(schema)))
    return calls


# The skills scenarios' mock counts any read of a skill file as a prefetch: it cannot tell a read the
# model asked for from one made ahead of need. In the no-prefetch scenario the model asks for no skill.
SKILLS_LISTED_ONLY = {"sep-2640-client-no-prefetch"}


def use_skills(client: mcpsync.Client, scenario: str) -> None:
    """What a host does with a server's skills: list them; when the model asks for one, load it (verified).

    Only a SKILL.md that passed verification leads on to the skill's other files; a refused one is
    reported and its content, withheld by mcpsync, goes nowhere.
    """
    skills = client.list_skills()
    print(f"skills: {', '.join(skill.name for skill in skills) or '(none)'}")
    if not skills or scenario in SKILLS_LISTED_ONLY:
        return
    try:
        loaded = client.load_skill(skills[0])
    except mcpsync.SkillVerificationError as exc:
        print(f"skill {skills[0].name!r} refused: {exc}")
        return
    print(f"loaded skill {loaded.skill.name!r} ({len(loaded.content.data)} bytes, verified)")
    for file in loaded.skill.files:
        if file.uri != loaded.skill.uri:
            try:
                print(f"read {file.uri}: {len(client.read_skill_file(loaded.skill, file.uri).data)} bytes")
            except mcpsync.SkillVerificationError as exc:
                print(f"skill file refused: {exc}")


def main(argv: Any) -> int:
    if len(argv) < 2:
        print("usage: python -m tests.conformance.client <server-url>", file=sys.stderr)
        return 2
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    options: Dict[str, Any] = {"elicitation_handler": answer_elicitation, "timeout": 20.0}
    # The era the scenario tests: the harness names the version (0.2+); 0.1.x names none, so the client
    # finds the era itself, as an application would.
    options["protocol"] = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or "auto"
    auth = auth_for(scenario, context)
    if auth is not None:
        options["auth"] = auth
    try:
        with mcpsync.connect(url, **options) as client:
            if "io.modelcontextprotocol/skills" in (client.server_capabilities.get("extensions") or {}):
                use_skills(client, scenario)
            tools = client.list_tools() if "tools" in client.server_capabilities else []
            for name, arguments in planned_calls(tools, context):
                try:
                    result = client.call_tool(name, arguments)
                    print(f"called {name}: {result.text[:200]!r}")
                except (mcpsync.ToolError, mcpsync.MCPError) as exc:
                    print(f"tool {name} reported an error: {exc}")
    except Exception as exc:  # the harness reads the exit status; say what went wrong
        print(f"{scenario}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
