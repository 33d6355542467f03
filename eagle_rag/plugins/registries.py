"""Named component registries (encoders, parsers, knowledge engines), one owner per name."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from eagle_rag.errors import ComponentError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Registered(Generic[T]):
    """A component with its name and the namespace of the plugin that registered it."""

    name: str
    component: T
    owner: str


class ComponentRegistry(Generic[T]):
    """Maps names to components of one kind; a name is registered once, never replaced."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, Registered[T]] = {}

    def register(self, name: str, component: T, *, owner: str) -> None:
        if not name:
            raise ComponentError(f"{self.kind} name must not be empty", plugin=owner)
        existing = self._items.get(name)
        if existing is not None:
            raise ComponentError(
                f"{self.kind} {name!r} is already registered by plugin {existing.owner!r}",
                plugin=owner,
                component=name,
            )
        self._items[name] = Registered(name, component, owner)

    def get(self, name: str) -> T:
        try:
            return self._items[name].component
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            raise ComponentError(
                f"no {self.kind} named {name!r} (registered: {known})", component=name
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[Registered[T]]:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def names(self) -> list[str]:
        return sorted(self._items)

    def remove_owner(self, owner: str) -> None:
        """Drop everything a plugin registered (used when it unloads)."""
        self._items = {k: v for k, v in self._items.items() if v.owner != owner}
