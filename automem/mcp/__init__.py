"""`automem mcp`: an MCP server on stdio that gives an assistant (Claude Desktop, Claude Code,
Cursor, ...) the memory tools, talking to the service over HTTP with the SDK.

Tools mirror AutoMem's MCP bridges: store_memory, recall_memory (with AutoMem's `format`),
update_memory, delete_memory, associate_memories (one link or a batch of up to 500),
memories_by_tag and check_health (also published as AutoMem's check_database_health), with
annotations (read-only, destructive, idempotent hints) and schema constraints (importance and
strength 0-1, the 7 memory types, the 11 authorable relationship types, limits). Content over
the hard limit (2000 characters by default) is refused by the tool with a message that says how
to fix it, before any request. Every result is a short text for the model plus structured
content typed by an output schema.

- `schemas`: argument types and the structured outputs;
- `render`: the texts and outputs built from the SDK's answers (pure functions);
- `tools`: the tools, module-level async functions over a `ToolContext`;
- `server`: the tool table, `build_server` and `run`.
"""
