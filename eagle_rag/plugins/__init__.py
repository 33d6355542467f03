"""The microkernel: plugin contract, hook catalog, HookBus, PluginManager, audit, registries.

Nothing in this package imports ``plugins.*``, ``eagle_rag.api``, ``eagle_rag.mcp`` or
``eagle_rag.web`` (tests/plugins/test_kernel_imports.py enforces it).
"""
