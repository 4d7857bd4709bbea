"""The public surface: a curated, sorted __all__ and a light import."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mcpsync


def test_all_is_sorted_and_every_name_exists():
    assert list(mcpsync.__all__) == sorted(mcpsync.__all__)
    for name in mcpsync.__all__:
        assert hasattr(mcpsync, name), name


def test_all_is_pinned():
    expected = {
        "AudioContent", "BlobResourceContents", "CallToolResult", "CancelToken", "CapabilityError", "Client",
        "CompleteResult", "ConnectError", "ConnectionLost", "ServerUnreachable", "Content", "EmbeddedResource", "GetPromptResult", "HTTPStatusError",
        "ImageContent", "Implementation", "MCPError", "MCPSyncError", "MemoryTransport", "ProgressBar", "Prompt",
        "PromptArgument", "PromptList", "PromptMessage", "ProtocolError", "ReadResourceResult", "RequestCancelled",
        "RequestTimeout", "Resource", "ResourceContents", "ResourceLink", "ResourceList", "ResourceTemplate", "SSETransport", "SessionExpired",
        "StdioTransport", "StreamableHTTPTransport",
        "TextContent", "TextResourceContents", "Tool", "ToolError", "ToolList", "Transport", "TransportClosed",
        "TransportError", "UnknownContent", "UnsupportedProtocolVersion", "__version__", "call_mcp", "connect",
        "create_transport", "parse_sse",
        # the manager (issue 5)
        "ConfigError", "ManagedTool", "Manager", "ReconnectPolicy", "ServerConfig", "ServerNotConnected",
        "ServerStatus", "UnknownServerError", "UnknownToolError",
        # authorization (issue 6)
        "AuthError", "ClientCredentials", "FileTokenStore", "MemoryTokenStore", "OAuth", "TokenStore",
        # both protocol eras, handlers, subscriptions and tasks (issue 4)
        "CreateMessageParams", "CreateMessageResult", "ElicitParams", "ElicitResult", "LogMessage",
        "MissingClientCapability", "ResourceNotFound", "SamplingRejected", "Subscription", "Task", "TaskInfo",
        "URLElicitationRequired",
        # workload identity and enterprise-managed authorization (issue 14)
        "EnterpriseAuth", "WorkloadIdentity",
        # redirects stay on their origin (issue 13)
        "CrossOriginRedirect",
        "EgressRefused",
        # skills (issue 14)
        "LoadedSkill", "Skill", "SkillContent", "SkillFile", "SkillVerificationError", "UnknownSkillError",
        # fork safety and pickling (issue 12)
        "ForkedError",
        # a broken 2026-07-28 response stream is sent again, then raised (issue 14)
        "StreamBroken",
        # the server's capabilities, typed (issue 15)
        "ServerCapabilities",
        # no orphans: the opt-in orderly close on SIGTERM, SIGHUP and SIGINT (issue 12)
        "SignalExit", "install_signal_handlers",
        # configs as people write them, and output limits (issue 15)
        "SpilledResult", "ToolNotAllowed",
        # directories for results and secrets are private, or refused (issue 20)
        "UnsafeDirectory",
        # batch calls and retries that cannot duplicate work (issue 25)
        "Retry",
    }
    assert set(mcpsync.__all__) - expected == set(), "new public names: add them here deliberately"
    assert expected - set(mcpsync.__all__) == set(), "public names removed"


def test_version_is_a_string():
    assert isinstance(mcpsync.__version__, str) and mcpsync.__version__


def test_import_pulls_in_no_http_stack_and_no_asyncio():
    code = ("import sys, mcpsync; "
            "print(' '.join(m for m in ('requests', 'urllib3', 'sseclient', 'asyncio') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.strip() == ""


def test_exceptions_form_one_tree():
    for name in ("CapabilityError", "ConfigError", "ConnectError", "HTTPStatusError", "MCPError",
                 "ProtocolError", "RequestCancelled", "RequestTimeout", "ServerNotConnected", "ToolError",
                 "TransportClosed", "TransportError", "UnknownServerError", "UnknownToolError",
                 "UnsupportedProtocolVersion"):
        assert issubclass(getattr(mcpsync, name), mcpsync.MCPSyncError), name
    assert issubclass(mcpsync.RequestTimeout, TimeoutError)


def test_exceptions_pickle():
    import pickle

    for exc in (mcpsync.MCPError(-32602, "bad", {"x": 1}), mcpsync.RequestTimeout("Request timeout after 5ms"),
                mcpsync.RequestCancelled("why"), mcpsync.TransportClosed("Transport closed", returncode=3),
                mcpsync.UnsupportedProtocolVersion("1999-01-01", ["2025-11-25"]),
                mcpsync.MissingClientCapability(-32021, "needs", {"requiredCapabilities": {"sampling": {}}}),
                mcpsync.URLElicitationRequired(-32042, "log in", {"elicitations": []}),
                mcpsync.ResourceNotFound(-32002, "gone"), mcpsync.SamplingRejected("no")):
        copy = pickle.loads(pickle.dumps(exc))
        assert type(copy) is type(exc) and str(copy) == str(exc)


@pytest.mark.parametrize("path, name", [("mcpsync.tasks", "Task"), ("mcpsync.tasks", "TaskInfo"),
                                        ("mcpsync.subscriptions", "Subscription")])
def test_the_handles_keep_their_public_paths(path: str, name: str) -> None:
    """Their code is in the feature rooms (mcpsync/_features/); reprs, pickles and annotations keep the path."""
    import importlib
    import pickle
    import typing

    value = getattr(importlib.import_module(path), name)
    assert value is getattr(mcpsync, name) and value.__module__ == path
    typing.get_type_hints(value)  # the annotations resolve where the class says it lives
    if name == "TaskInfo":
        info = value.from_dict({"taskId": "t-1", "status": "working"})
        copy = pickle.loads(pickle.dumps(info))
        assert type(copy) is value and copy.task_id == "t-1"
