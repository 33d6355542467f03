"""The HookBus: subscribers register against declared hooks; the bus calls them in order.

Order is priority (higher first), then registration order. A subscriber bound to a namespace runs
only when the call's ``HookContext.plugin_namespace`` matches; ``namespace=None`` runs always.
Sync and async subscribers both work: a subscriber that blocks for long should be async and
offload its work, because the bus awaits subscribers one after another.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from eagle_rag.errors import (
    HookInvocationError,
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


class HookBus:
    """Dispatches hook calls to subscribers in the hook's declared mode and failure policy."""

    def __init__(self, audit: PluginAudit, tracing: Tracing | None = None) -> None:
        self._audit = audit
        self.tracing = tracing or Tracing.off()  # every subscriber call is a traced stage
        self._subscriptions: dict[str, list[Subscription]] = {spec.name: [] for spec in CATALOG}
        self._sequence = itertools.count()
        self._observer: CallObserver | None = None

    def observe(self, observer: CallObserver | None) -> None:
        """Report every subscriber call's wall time to ``observer`` (None: stop reporting)."""
        self._observer = observer

    # --- registration ---------------------------------------------------------------------------

    def subscribe(
        self,
        hook: HookSpec[Any],
        handler: Callable[..., Any],
        *,
        plugin: str,
        priority: int = 0,
        namespace: str | None = None,
    ) -> Subscription:
        """Register ``handler``; its parameters must be a subset of the hook's, by name."""
        if hook.name not in self._subscriptions:
            raise PluginValidationError(
                f"{hook.name} is not a declared hook", plugin=plugin, hook=hook.name
            )
        params = _validated_params(hook, handler, plugin)
        subscription = Subscription(
            hook, handler, plugin, priority, namespace, next(self._sequence), params
        )
        ordered = [*self._subscriptions[hook.name], subscription]
        ordered.sort(key=lambda s: (-s.priority, s.sequence))
        self._subscriptions[hook.name] = ordered
        return subscription

    def unsubscribe_plugin(self, plugin: str) -> None:
        """Remove every subscription a plugin made (used on unload)."""
        for name, subs in self._subscriptions.items():
            self._subscriptions[name] = [s for s in subs if s.plugin != plugin]

    def subscribers(self, hook: HookSpec[Any]) -> list[Subscription]:
        """Subscribers of a hook in call order (for health and doctor)."""
        return list(self._subscriptions[hook.name])

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
        self, hook: HookSpec[R], value: R, *, ctx: HookContext, **kwargs: Any
    ) -> R:
        """Pass ``value`` through each subscriber; a subscriber returning None keeps it as is."""
        value_param = hook.params[0]
        self._check_call(hook, HookMode.TRANSFORM, ctx, {value_param: value, **kwargs})
        for sub in self._active(hook, ctx):
            ok, result = await self._call(sub, ctx, {value_param: value, **kwargs})
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
        return [s for s in self._subscriptions[hook.name] if s.applies_to(ctx)]

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
        self, sub: Subscription, ctx: HookContext, kwargs: dict[str, Any]
    ) -> tuple[bool, Any]:
        """Run one subscriber under the hook's failure policy; ``(False, None)`` if it degraded."""
        arguments = {"ctx": ctx, **kwargs}
        started = time.perf_counter()
        try:
            result = await self._run(sub, ctx, {name: arguments[name] for name in sub.params})
        except Exception as exc:
            if sub.hook.policy is FailurePolicy.FAIL_FAST and isinstance(exc, InvalidInputError):
                # The input is at fault (a corrupt or encrypted file), not the plugin: the user
                # reads the reason as it is, and the API answers 4xx, not an upstream 502.
                raise
            if sub.hook.policy is FailurePolicy.FAIL_FAST:
                raise HookInvocationError(
                    f"plugin {sub.plugin!r} failed in hook {sub.hook.name}: {exc}",
                    plugin=sub.plugin,
                    hook=sub.hook.name,
                    namespace=ctx.plugin_namespace,
                ) from exc
            logger.warning("hook %s subscriber of %s degraded: %s", sub.hook.name, sub.plugin, exc)
            self._audit.log_decision(
                "hook_failure",
                "skipped",
                plugin=sub.plugin,
                namespace=ctx.plugin_namespace,
                hook=sub.hook.name,
                error=f"{type(exc).__name__}: {exc}",
            )
            return False, None
        finally:
            if self._observer is not None:
                self._observer(sub.hook.name, sub.plugin, (time.perf_counter() - started) * 1000)
        return True, result

    async def _run(self, sub: Subscription, ctx: HookContext, arguments: dict[str, Any]) -> Any:
        """Call the subscriber inside its stage's span (plugin, KB and document attached)."""
        stage = HOOK_STAGES.get(sub.hook.name)
        if stage is None:
            result = sub.handler(**arguments)
            return (await result) if inspect.isawaitable(result) else result
        with self.tracing.span(
            stage,
            ingest=ctx.document_id is not None,
            plugin=sub.plugin,
            hook=sub.hook.name,
            namespace=ctx.plugin_namespace,
            kb=",".join(ctx.kb_names) or None,
            document=ctx.document_id,
        ):
            result = sub.handler(**arguments)
            return (await result) if inspect.isawaitable(result) else result


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
