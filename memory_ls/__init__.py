"""memory-ls: a language server, CLI and MCP server for an AI coding agent's memory files."""

__version__ = "0.1.0"
