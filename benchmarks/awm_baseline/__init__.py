"""A faithful baseline of the AWM serving design: FastAPI + MCP streamable HTTP, one process per instance."""
