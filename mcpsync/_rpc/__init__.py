"""JSON-RPC 2.0 and nothing of MCP: messages, the engine, worker threads, call options."""
