"""mcpsync: a synchronous, thread-based client SDK for the Model Context Protocol.

::

    import mcpsync

    with mcpsync.connect(["python", "server.py"]) as client:
        print([tool.name for tool in client.list_tools()])
        print(client.call_tool("echo", {"text": "hi"}).text)

Importing mcpsync loads neither asyncio nor any HTTP library.
"""

import logging as _logging

from ._version import __version__
from .cancel import CancelToken
from .client import Client, connect
from .progress import ProgressBar
from .exceptions import (
    CapabilityError,
    ConnectError,
    HTTPStatusError,
    MCPError,
    MCPSyncError,
    ProtocolError,
    RequestCancelled,
    RequestTimeout,
    ToolError,
    TransportClosed,
    TransportError,
    UnsupportedProtocolVersion,
)
from .transports import MemoryTransport, StdioTransport, Transport, create_transport
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

__all__ = [
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "CancelToken",
    "CapabilityError",
    "Client",
    "CompleteResult",
    "ConnectError",
    "Content",
    "EmbeddedResource",
    "GetPromptResult",
    "HTTPStatusError",
    "ImageContent",
    "Implementation",
    "MCPError",
    "MCPSyncError",
    "MemoryTransport",
    "ProgressBar",
    "Prompt",
    "PromptArgument",
    "PromptList",
    "PromptMessage",
    "ProtocolError",
    "ReadResourceResult",
    "RequestCancelled",
    "RequestTimeout",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceList",
    "ResourceTemplate",
    "StdioTransport",
    "TextContent",
    "TextResourceContents",
    "Tool",
    "ToolError",
    "ToolList",
    "Transport",
    "TransportClosed",
    "TransportError",
    "UnknownContent",
    "UnsupportedProtocolVersion",
    "__version__",
    "connect",
    "create_transport",
]

_logging.getLogger(__name__).addHandler(_logging.NullHandler())
