"""The lakehouse-bi industry plugin: semantic-layer metadata as typed, retrievable knowledge."""

from plugins.lakehouse_bi.requirements import check

check()  # before the imports below: a missing extra is named, with the command that adds it

from plugins.lakehouse_bi.plugin import LakehouseBiPlugin  # noqa: E402

# The class itself: the PluginManager creates one instance per app.
plugin = LakehouseBiPlugin

__all__ = ["LakehouseBiPlugin", "plugin"]
