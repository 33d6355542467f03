"""The HookBus: subscribers register against declared hooks; the bus calls them in order.

Order is priority (higher first), then registration order. A subscriber bound to a namespace runs
only when the call's ``HookContext.plugin_namespace`` matches; ``namespace=None`` runs always.
Sync and async subscribers both work. A sync one runs on the event loop (Core's quick ones and
plugins' loop-bound ones, which start tasks, rely on that), so one that blocks for long must be
async and offload its work. A result is checked against the hook's declared type, and an async
query subscriber has ``query_hook_timeout_s``: either failure counts as the subscriber raising.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
import itertools
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from eagle_rag.errors import (
    EagleError,
    HookInvocationError,
    HookResultError,
    HookTimeoutError,
    InvalidInputError,
    PluginError,
    PluginValidationError,
)
from eagle_rag.plugins.audit import PluginAudit
from eagle_rag.plugins.context import HookContext
from eagle_rag.plugins.hooks import CATALOG, FailurePolicy, HookMode, HookSpec
from eagle_rag.tracing import HOOK_STAGES, Tracing

logger = logging.getLogger(__name__)

R = TypeVar("R")
# Told (hook name, plugin, milliseconds) after each subscriber call, e.g. by `eagle-rag eval`.
CallObserver = Callable[[str, str, float], None]
# How long a query (degrade) hook's async subscriber may take: plugins.query_hook_timeout_s.
DEFAULT_QUERY_HOOK_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Subscription:
    """One subscriber of one hook, with what orders and filters it."""

    hook: HookSpec[Any]
    handler: Callable[..., Any]
    plugin: str
    priority: int
    namespace: str | None
    sequence: int
    params: tuple[str, ...]

    def applies_to(self, ctx: HookContext) -> bool:
        return self.namespace is None or self.namespace == ctx.plugin_namespace


@dataclass(slots=True)
class _Subscriptions:
    """What a bus and every plugin's view of it share: the subscribers and the call observer."""

    by_hook: dict[str, list[Subscription]]
    sequence: itertools.count[int]
    observer: CallObserver | None = None


class HookBus:
    """Dispatches hook calls to subscribers in the hook's declared mode and failure policy.

    The app holds the bus; each plugin gets :meth:`for_plugin`'s view, which subscribes under
    that plugin's name only, so attribution and unload follow the real plugin."""

    def __init__(
        self,
        audit: PluginAudit,
        tracing: Tracing | None = None,
        *,
        query_hook_timeout_s: float = DEFAULT_QUERY_HOOK_TIMEOUT_S,
    ) -> None:
        self._audit = audit
        self.tracing = tracing or Tracing.off()  # every subscriber call is a traced stage
        self._shared = _Subscriptions({spec.name: [] for spec in CATALOG}, itertools.count())
        self._owner: str | None = None  # set on a plugin's view
        self._query_hook_timeout_s = query_hook_timeout_s

    def for_plugin(self, plugin: str) -> HookBus:
        """This bus as ``plugin`` sees it: same subscribers, but it subscribes as ``plugin``."""
        view = copy.copy(self)
        view._owner = plugin
        return view

    def observe(self, observer: CallObserver | None) -> None:
        """Report every subscriber call's wall time to ``observer`` (None: stop reporting)."""
        self._refuse_on_a_view("observe every call")
        self._shared.observer = observer

    def _refuse_on_a_view(self, what: str, plugin: str | None = None) -> None:
        """A plugin's view acts for that plugin only: the app's bus observes and unsubscribes
        others (another plugin could otherwise drop Core's subscribers)."""
        if self._owner is not None and plugin != self._owner:
            raise PluginError(f"plugin {self._owner!r} cannot {what}", plugin=self._owner)

    # --- registration ---------------------------------------------------------------------------

    def subscribe(
        self,
        hook: HookSpec[Any],
        handler: Callable[..., Any],
        *,
        plugin: str | None = None,
        priority: int = 0,
        namespace: str | None = None,
    ) -> Subscription:
        """Register ``handler``; its parameters must be a subset of the hook's, by name."""
        owner = self._subscriber_name(hook, plugin)
        if hook.name not in self._shared.by_hook:
            raise PluginValidationError(
                f"{hook.name} is not a declared hook", plugin=owner, hook=hook.name
            )
        params = _validated_params(hook, handler, owner)
        sequence = next(self._shared.sequence)
        subscription = Subscription(hook, handler, owner, priority, namespace, sequence, params)
        ordered = [*self._shared.by_hook[hook.name], subscription]
        ordered.sort(key=lambda s: (-s.priority, s.sequence))
        self._shared.by_hook[hook.name] = ordered
        return subscription

    def _subscriber_name(self, hook: HookSpec[Any], plugin: str | None) -> str:
        """A plugin's view subscribes as that plugin; naming another one is refused, because
        health, doctor, the audit, metrics and unload would then blame or keep the wrong one."""
        if self._owner is None:
            if not plugin:
                raise PluginError("subscribe needs plugin= on the app's own bus", hook=hook.name)
            return plugin
        if plugin is not None and plugin != self._owner:
            raise PluginValidationError(
                f"plugin {self._owner!r} cannot subscribe as {plugin!r}: a plugin subscribes "
                "under its own namespace (omit plugin=)",
                plugin=self._owner,
                hook=hook.name,
                argument="plugin",
            )
        return self._owner

    def unsubscribe_plugin(self, plugin: str) -> None:
        """Remove every subscription a plugin made (used on unload)."""
        self._refuse_on_a_view(f"unsubscribe {plugin!r}", plugin)
        for name, subs in self._shared.by_hook.items():
            self._shared.by_hook[name] = [s for s in subs if s.plugin != plugin]

    def subscribers(self, hook: HookSpec[Any]) -> list[Subscription]:
        """Subscribers of a hook in call order (for health and doctor)."""
        return list(self._shared.by_hook[hook.name])

    # --- invocation -----------------------------------------------------------------------------

    async def invoke_first(self, hook: HookSpec[R], *, ctx: HookContext, **kwargs: Any) -> R | None:
        """Return the first non-None result, or None when every subscriber abstains."""
        self._check_call(hook, HookMode.FIRST, ctx, kwargs)
        for sub in self._active(hook, ctx):
            ok, result = await self._call(sub, ctx, kwargs)
            if ok and result is not None:
                return result  # type: ignore[no-any-return]
        return None

    async def invoke_transform(
        self,
        hook: HookSpec[R],
        value: R,
        *,
        ctx: HookContext,
        check: Callable[[R, R], None] | None = None,
        **kwargs: Any,
    ) -> R:
        """Pass ``value`` through each subscriber; a subscriber returning None keeps it as is.

        ``check(before, after)`` may refuse one subscriber's result by raising: that counts as
        the subscriber's failure, so the error names the plugin that returned it."""
        value_param = hook.params[0]
        self._check_call(hook, HookMode.TRANSFORM, ctx, {value_param: value, **kwargs})
        for sub in self._active(hook, ctx):
            keep = None if check is None else functools.partial(check, value)
            ok, result = await self._call(sub, ctx, {value_param: value, **kwargs}, keep)
            if ok and result is not None:
                value = result
        return value

    async def invoke_all(self, hook: HookSpec[R], *, ctx: HookContext, **kwargs: Any) -> list[R]:
        """Collect every subscriber's non-None result, in call order."""
        self._check_call(hook, HookMode.ALL, ctx, kwargs)
        results: list[R] = []
        for sub in self._active(hook, ctx):
            ok, result = await self._call(sub, ctx, kwargs)
            if ok and result is not None:
                results.append(result)
        return results

    # --- internals ------------------------------------------------------------------------------

    def _active(self, hook: HookSpec[Any], ctx: HookContext) -> list[Subscription]:
        # Snapshot, so a subscriber that (un)subscribes during a call cannot reorder it.
        return [s for s in self._shared.by_hook[hook.name] if s.applies_to(ctx)]

    @staticmethod
    def _check_call(
        hook: HookSpec[Any], mode: HookMode, ctx: HookContext, kwargs: dict[str, Any]
    ) -> None:
        if hook.mode is not mode:
            raise PluginError(
                f"{hook.name} is a {hook.mode.value} hook; call it with invoke_{hook.mode.value}",
                hook=hook.name,
            )
        expected = set(hook.params) - {"ctx"}
        given = set(kwargs)
        if given != expected:
            raise PluginError(
                f"{hook.name} takes {sorted(expected)}, got {sorted(given)}", hook=hook.name
            )

    async def _call(
        self,
        sub: Subscription,
        ctx: HookContext,
        kwargs: dict[str, Any],
        check: Callable[[Any], None] | None = None,
    ) -> tuple[bool, Any]:
        """Run one subscriber under the hook's failure policy; ``(False, None)`` if it degraded."""
        arguments = {"ctx": ctx, **kwargs}
        started = time.perf_counter()
        try:
            result = await self._run(sub, ctx, {name: arguments[name] for name in sub.params})
            if check is not None and result is not None:
                check(result)
        except Exception as exc:
            self._fail(sub, ctx, exc)
            return False, None
        finally:
            if self._shared.observer is not None:
                elapsed = (time.perf_counter() - started) * 1000
                self._shared.observer(sub.hook.name, sub.plugin, elapsed)
        return True, result

    def _fail(self, sub: Subscription, ctx: HookContext, exc: Exception) -> None:
        """Apply the hook's failure policy: raise (fail_fast) or audit and skip (degrade)."""
        # A subscriber may name the plugin at fault itself (a plugin's Parser that Core ran).
        culprit = exc.plugin if isinstance(exc, HookInvocationError) and exc.plugin else sub.plugin
        if sub.hook.policy is FailurePolicy.FAIL_FAST:
            if isinstance(exc, InvalidInputError | HookInvocationError):
                # The input is at fault (a corrupt or encrypted file), not the plugin: the user
                # reads the reason as it is, and the API answers 4xx, not an upstream 502.
                # Or the error already names the plugin and hook at fault.
                raise exc
            raise HookInvocationError(
                f"plugin {culprit!r} failed in hook {sub.hook.name}: {_reason(exc)}",
                plugin=culprit,
                hook=sub.hook.name,
                namespace=ctx.plugin_namespace,
            ) from exc
        logger.warning("hook %s subscriber of %s degraded: %s", sub.hook.name, culprit, exc)
        self._audit.log_decision(
            "hook_failure",
            "skipped",
            plugin=culprit,
            namespace=ctx.plugin_namespace,
            hook=sub.hook.name,
            error=f"{type(exc).__name__}: {exc}",
        )

    async def _run(self, sub: Subscription, ctx: HookContext, arguments: dict[str, Any]) -> Any:
        """Call the subscriber inside its stage's span (plugin, KB and document attached)."""
        stage = HOOK_STAGES.get(sub.hook.name)
        if stage is None:
            return await self._checked(sub, arguments)
        with self.tracing.span(
            stage,
            ingest=ctx.document_id is not None,
            plugin=sub.plugin,
            hook=sub.hook.name,
            namespace=ctx.plugin_namespace,
            kb=",".join(ctx.kb_names) or None,
            document=ctx.document_id,
        ):
            return await self._checked(sub, arguments)

    async def _checked(self, sub: Subscription, arguments: dict[str, Any]) -> Any:
        """The subscriber's result, refused (raised, inside its span) when of the wrong type."""
        result = sub.handler(**arguments)
        if inspect.isawaitable(result):
            result = await self._awaited(sub, result)
        if isinstance(result, list) and not sub.hook.accepts(result):
            # A list where a tuple is declared (plugins return lists as often): taken as one.
            result = tuple(result) if sub.hook.accepts(tuple(result)) else result
        if not sub.hook.accepts(result):
            raise HookResultError(
                f"returned {_shape(result)}, not {_type_name(sub.hook.returns)}",
                plugin=sub.plugin,
                hook=sub.hook.name,
            )
        return result

    async def _awaited(self, sub: Subscription, pending: Awaitable[Any]) -> Any:
        """Await an async subscriber; on the query path only for so long (a hung enricher must
        cost its contribution, not the answer)."""
        if sub.hook.policy is not FailurePolicy.DEGRADE:
            return await pending
        deadline = asyncio.timeout(self._query_hook_timeout_s)  # no extra task per call
        try:
            async with deadline:
                return await pending
        except TimeoutError:
            if not deadline.expired():
                raise  # the subscriber's own timeout (a backend it called), not the bus's
            raise HookTimeoutError(
                f"did not answer within {self._query_hook_timeout_s:g} s "
                "(plugins.query_hook_timeout_s)",
                plugin=sub.plugin,
                hook=sub.hook.name,
            ) from None


def _reason(exc: Exception) -> str:
    """An Eagle error's message without its fields (the wrapper names plugin and hook)."""
    return exc.message if isinstance(exc, EagleError) else str(exc)


def _shape(value: Any) -> str:
    """A short description of a wrong result: its type, and a bad element's for a tuple."""
    if isinstance(value, tuple) and value:
        kinds = sorted({type(item).__name__ for item in value})
        return f"a tuple of {', '.join(kinds)}"
    return f"a {type(value).__name__}"


def _type_name(annotation: Any) -> str:
    """``tuple[TextChunk, ...] | None``, without the module paths."""
    if isinstance(annotation, type):
        return annotation.__name__
    return re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", str(annotation))


def _validated_params(
    hook: HookSpec[Any], handler: Callable[..., Any], plugin: str
) -> tuple[str, ...]:
    """Check a subscriber against its hook spec when it registers, not when it is first called."""
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError) as exc:
        raise PluginValidationError(
            f"cannot read the signature of {handler!r}", plugin=plugin, hook=hook.name
        ) from exc
    allowed = set(hook.params)
    names: list[str] = []
    for param in signature.parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise PluginValidationError(
                f"subscriber of {hook.name} must name its parameters, not use *{param.name}",
                plugin=plugin,
                hook=hook.name,
                argument=param.name,
            )
        if param.name not in allowed:
            raise PluginValidationError(
                f"subscriber of {hook.name} takes {param.name!r}, "
                f"which the hook does not provide (it provides {list(hook.params)})",
                plugin=plugin,
                hook=hook.name,
                argument=param.name,
            )
        names.append(param.name)
    if hook.mode is HookMode.TRANSFORM and hook.params[0] not in names:
        raise PluginValidationError(
            f"a {hook.name} subscriber must take {hook.params[0]!r}: it transforms that value",
            plugin=plugin,
            hook=hook.name,
            argument=hook.params[0],
        )
    return tuple(names)
