"""The lakehouse-bi industry plugin: semantic-layer metadata as typed, retrievable knowledge."""

from plugins.lakehouse_bi.plugin import LakehouseBiPlugin

# The class itself: the PluginManager creates one instance per app.
plugin = LakehouseBiPlugin

__all__ = ["LakehouseBiPlugin", "plugin"]
