"""mcpsync: a synchronous, thread-based client SDK for the Model Context Protocol.

::

    import mcpsync

    with mcpsync.connect(["python", "server.py"]) as client:
        print([tool.name for tool in client.list_tools()])
        print(client.call_tool("echo", {"text": "hi"}).text)

Importing mcpsync loads neither asyncio nor any HTTP library.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from . import _log
from ._version import __version__
from .cancel import CancelToken
from .capabilities import ServerCapabilities
from .client import Client, connect
from .retry import Retry
from ._features.spill import SpilledResult
from .exceptions import (
    AuthError,
    CapabilityError,
    ConfigError,
    ConnectError,
    ConnectionLost,
    CrossOriginRedirect,
    EgressRefused,
    ForkedError,
    HTTPStatusError,
    MCPError,
    MCPSyncError,
    MissingClientCapability,
    ProtocolError,
    RequestCancelled,
    RequestTimeout,
    ResourceNotFound,
    SamplingRejected,
    ServerNotConnected,
    ServerUnreachable,
    SessionExpired,
    SignalExit,
    SkillVerificationError,
    StreamBroken,
    ToolError,
    ToolNotAllowed,
    TransportClosed,
    TransportError,
    UnknownServerError,
    UnknownSkillError,
    UnknownToolError,
    UnsafeDirectory,
    UnsupportedProtocolVersion,
    URLElicitationRequired,
)
from .handlers import CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, LogMessage
from .subscriptions import Subscription
from .tasks import Task, TaskInfo
from .transports import MemoryTransport, StdioTransport, Transport, create_transport
from .skills import LoadedSkill, Skill, SkillContent, SkillFile
from .types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    CompleteResult,
    Content,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    Implementation,
    Prompt,
    PromptArgument,
    PromptList,
    PromptMessage,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceLink,
    ResourceList,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    Tool,
    ToolList,
    UnknownContent,
)

if _TYPE_CHECKING:
    from .auth import (ClientCredentials, EnterpriseAuth, FileTokenStore, MemoryTokenStore, OAuth, TokenStore,
                       WorkloadIdentity)
    from .config import ServerConfig
    from ._signals import install_signal_handlers
    from .manager import ManagedTool, Manager, ReconnectPolicy, ServerStatus
    from .progress import ProgressBar
    from .stateless import call_mcp, parse_sse
    from .transports import SSETransport, StreamableHTTPTransport

# The manager, config and auth modules, the HTTP transports, the stateless calls, the progress bar
# and the opt-in signal handlers load on first use, keeping ``import mcpsync`` light (auth
# subclasses ``requests.auth.AuthBase``, so it imports requests; a script that starts a stdio
# server needs no HTTP code at all).
_LAZY = {
    "ClientCredentials": "auth",
    "EnterpriseAuth": "auth",
    "FileTokenStore": "auth",
    "MemoryTokenStore": "auth",
    "OAuth": "auth",
    "TokenStore": "auth",
    "WorkloadIdentity": "auth",
    "ManagedTool": "manager",
    "Manager": "manager",
    "ReconnectPolicy": "manager",
    "ServerConfig": "config",
    "ServerStatus": "manager",
    "SSETransport": "transports",
    "StreamableHTTPTransport": "transports",
    "ProgressBar": "progress",
    "install_signal_handlers": "_signals",
    "call_mcp": "stateless",
    "parse_sse": "stateless",
}


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpsync' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "AudioContent",
    "AuthError",
    "BlobResourceContents",
    "CallToolResult",
    "CancelToken",
    "CapabilityError",
    "Client",
    "ClientCredentials",
    "CompleteResult",
    "ConfigError",
    "ConnectError",
    "ConnectionLost",
    "Content",
    "CreateMessageParams",
    "CreateMessageResult",
    "CrossOriginRedirect",
    "EgressRefused",
    "ElicitParams",
    "ElicitResult",
    "EmbeddedResource",
    "EnterpriseAuth",
    "FileTokenStore",
    "ForkedError",
    "GetPromptResult",
    "HTTPStatusError",
    "ImageContent",
    "Implementation",
    "LoadedSkill",
    "LogMessage",
    "MCPError",
    "MCPSyncError",
    "ManagedTool",
    "Manager",
    "MemoryTokenStore",
    "MemoryTransport",
    "MissingClientCapability",
    "OAuth",
    "ProgressBar",
    "Prompt",
    "PromptArgument",
    "PromptList",
    "PromptMessage",
    "ProtocolError",
    "ReadResourceResult",
    "ReconnectPolicy",
    "RequestCancelled",
    "RequestTimeout",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceList",
    "ResourceNotFound",
    "ResourceTemplate",
    "Retry",
    "SSETransport",
    "SamplingRejected",
    "ServerCapabilities",
    "ServerConfig",
    "ServerNotConnected",
    "ServerStatus",
    "ServerUnreachable",
    "SessionExpired",
    "SignalExit",
    "Skill",
    "SkillContent",
    "SkillFile",
    "SkillVerificationError",
    "SpilledResult",
    "StdioTransport",
    "StreamBroken",
    "StreamableHTTPTransport",
    "Subscription",
    "Task",
    "TaskInfo",
    "TextContent",
    "TextResourceContents",
    "TokenStore",
    "Tool",
    "ToolError",
    "ToolList",
    "ToolNotAllowed",
    "Transport",
    "TransportClosed",
    "TransportError",
    "URLElicitationRequired",
    "UnknownContent",
    "UnknownServerError",
    "UnknownSkillError",
    "UnknownToolError",
    "UnsafeDirectory",
    "UnsupportedProtocolVersion",
    "WorkloadIdentity",
    "__version__",
    "call_mcp",
    "connect",
    "create_transport",
    "install_signal_handlers",
    "parse_sse",
]

# The package's NullHandler now if the application has loaded logging already, else when logging
# is first loaded (see mcpsync/_log.py: until then no record is made at all).
_log.install_null_handler()
