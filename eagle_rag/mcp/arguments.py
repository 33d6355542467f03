"""Tool arguments that do not match a tool's input schema, told as REST tells a bad field.

FastMCP checks arguments against the schema before a tool runs and, on a mismatch, returns
pydantic's whole report (error counts, the input echoed back, a documentation URL). An agent
reads the tool error to correct its call, so it gets ``field: message`` instead, as every
other argument mistake of Core's tools reads (``first_problem``, the REST 422's wording).
"""

from __future__ import annotations

from typing import Any

import mcp.types as mt
from fastmcp.exceptions import ToolError, ValidationError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import ToolResult
from pydantic import ValidationError as PydanticValidationError

from eagle_rag.api.documented import first_problem


class ArgumentErrors(Middleware):
    """Turns an argument-validation failure into a tool error naming the first bad field."""

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        try:
            return await call_next(context)
        except ValidationError as exc:
            cause: Any = exc.__cause__
            if not isinstance(cause, PydanticValidationError):
                raise
            problem = first_problem(cause, "arguments")
            name = context.message.name
            raise ToolError(f"Error calling tool {name!r}: {problem}") from None
