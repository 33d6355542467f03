"""Template industry plugin: copy this folder to start a new vertical (see README.md)."""

from plugins._template.plugin import TemplatePlugin

# The class itself: the PluginManager creates one instance per app.
plugin = TemplatePlugin

__all__ = ["TemplatePlugin", "plugin"]
