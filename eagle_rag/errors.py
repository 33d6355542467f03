"""One error tree for all of Eagle-RAG.

Every error raised across a module boundary derives from :class:`EagleError` and carries the
fields that locate it (namespace, kb_name, document_id, plugin, hook, ...). The HTTP, SSE and MCP
edges translate these classes to status codes in a single table; nothing below the edge knows
about HTTP.

    EagleError
    ├── SettingsError                  bad or missing configuration
    ├── PluginError                    something a plugin did or declared
    │   ├── PluginLoadError            import, manifest, G3, duplicate, lifecycle failure
    │   ├── PluginDependencyError      missing dependency or dependency cycle
    │   ├── HookError                  one plugin in one hook (only as one of these)
    │   │   ├── PluginValidationError  a hook subscriber that does not fit its hook
    │   │   ├── HookInvocationError    a fail-fast hook subscriber raised
    │   │   ├── HookResultError        a hook subscriber returned a value of the wrong type
    │   │   └── HookTimeoutError       a query hook subscriber did not answer in time
    │   └── ComponentError             a registry rejected or could not find a component
    │       └── McpToolNameError       a tool name breaks the naming or RAG-only rules
    ├── AuthenticationError            no API key, or an unknown one
    ├── PermissionDeniedError          the caller may not touch this resource
    │   └── NamespaceError             a request named another namespace than the instance's
    ├── RateLimitedError               too many requests for this key
    ├── NotFoundError                  a resource does not exist (in this namespace)
    ├── ConflictError                  a resource with that name or content already exists
    ├── InvalidInputError              a request value is malformed or unsafe
    │   ├── PayloadTooLargeError       a file or request body over its limit
    │   └── UnsupportedMediaTypeError  a file type Eagle-RAG cannot parse
    ├── BackendUnavailableError        a storage, queue or model backend does not answer
    ├── ModelProviderError             a model endpoint refused a request or answered nonsense
    ├── UpstreamError                  an external knowledge service refused or answered nonsense
    └── VectorStoreError               the vector store answered but refused an operation
"""

from __future__ import annotations

from typing import Any, ClassVar


class EagleError(Exception):
    """Root of every Eagle-RAG error: a message plus the fields that locate the failure."""

    code: ClassVar[str] = "eagle_error"

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.fields: dict[str, Any] = {k: v for k, v in fields.items() if v is not None}

    def __str__(self) -> str:
        if not self.fields:
            return self.message
        located = ", ".join(f"{key}={value!r}" for key, value in sorted(self.fields.items()))
        return f"{self.message} ({located})"

    def to_dict(self) -> dict[str, Any]:
        """The wire shape used by every edge: ``{code, message, details?}``."""
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.fields:
            body["details"] = {k: _jsonable(v) for k, v in self.fields.items()}
        return body


def describe(exc: BaseException) -> str:
    """The one-line rendering of any failure, for steps, task errors and logs: an EagleError's
    message, anything else as ``Type: text``."""
    if isinstance(exc, EagleError):
        return exc.message
    return f"{type(exc).__name__}: {exc}"


def error_body(exc: BaseException) -> dict[str, Any]:
    """The wire shape of any failure on every edge (REST, SSE, MCP): ``{code, message,
    details?}``; an unexpected exception is ``internal_error`` naming its type only (its text
    may carry a database's host, user or SQL: that goes to the log)."""
    if isinstance(exc, EagleError):
        return exc.to_dict()
    return {"code": "internal_error", "message": f"internal error ({type(exc).__name__})"}


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)


class SettingsError(EagleError):
    """Configuration could not be loaded, interpolated or validated."""

    code = "settings_error"


class PluginError(EagleError):
    """A plugin failed to load, declared something invalid, or failed while running."""

    code = "plugin_error"

    def __init__(self, message: str, *, plugin: str | None = None, **fields: Any) -> None:
        super().__init__(message, plugin=plugin, **fields)
        self.plugin = plugin


class PluginLoadError(PluginError):
    """A plugin module could not be imported, validated or taken through its lifecycle."""

    code = "plugin_load_error"


class PluginDependencyError(PluginLoadError):
    """A plugin depends on a namespace that is not enabled, or dependencies form a cycle."""

    code = "plugin_dependency_error"


class HookError(PluginError):
    """A failure of one plugin in one hook (raised only as one of its kinds below)."""

    code = "hook_error"

    def __init__(self, message: str, *, plugin: str, hook: str, **fields: Any) -> None:
        super().__init__(message, plugin=plugin, hook=hook, **fields)
        self.hook = hook


class PluginValidationError(HookError):
    """A hook subscriber's signature does not fit the hook it subscribes to."""

    code = "plugin_validation_error"


class HookInvocationError(HookError):
    """A subscriber of a fail-fast hook raised; the cause is chained."""

    code = "hook_invocation_error"


class HookResultError(HookError):
    """A hook subscriber returned a value of another type than its hook declares (the bus
    handles it as the subscriber raising: never a request's answer itself)."""

    code = "hook_result_error"


class HookTimeoutError(HookError):
    """A query hook subscriber did not answer within ``plugins.query_hook_timeout_s`` (handled
    by the bus as the subscriber raising)."""

    code = "hook_timeout_error"


class ComponentError(PluginError):
    """A component registry rejected a registration or could not find a component."""

    code = "component_error"


class McpToolNameError(ComponentError):
    """An MCP tool name breaks ``{namespace}_{name}`` or the RAG-only rule."""

    code = "mcp_tool_name_error"


class AuthenticationError(EagleError):
    """The request carries no API key, or one this instance does not know."""

    code = "unauthorized"


class PermissionDeniedError(EagleError):
    """The caller is known but may not act on this resource (e.g. a KB outside its key)."""

    code = "forbidden"


class NamespaceError(PermissionDeniedError):
    """A request tried to act on a namespace other than the instance's own."""

    code = "namespace_forbidden"


class RateLimitedError(EagleError):
    """The caller sent more requests than its rate limit allows; retry after a while."""

    code = "rate_limited"


class NotFoundError(EagleError):
    """The named resource does not exist in this namespace."""

    code = "not_found"


class ConflictError(EagleError):
    """A resource with that name (or those bytes) already exists."""

    code = "conflict"


class InvalidInputError(EagleError):
    """A request value is malformed, out of range or unsafe."""

    code = "invalid_input"


class PayloadTooLargeError(InvalidInputError):
    """A file or a request body is larger than its configured limit."""

    code = "payload_too_large"


class UnsupportedMediaTypeError(InvalidInputError):
    """The content is of a type Eagle-RAG does not parse (images, archives, legacy formats)."""

    code = "unsupported_media_type"


class BackendUnavailableError(EagleError):
    """A storage, queue or model backend did not answer."""

    code = "backend_unavailable"


class ModelProviderError(EagleError):
    """A model endpoint refused the request (bad key, bad model) or answered malformed data."""

    code = "model_provider_error"


class UpstreamError(EagleError):
    """An external knowledge service (a bridged engine) refused a call or answered malformed."""

    code = "upstream_error"


class VectorStoreError(EagleError):
    """The vector store answered but refused or failed an operation."""

    code = "vector_store_error"
