"""The biomed industry plugin (profile ``biomed``, namespace ``biomed``); see README.md."""

from plugins.biomed.plugin import BiomedPlugin

# The class itself: the PluginManager creates one instance per app.
plugin = BiomedPlugin

__all__ = ["BiomedPlugin", "plugin"]
