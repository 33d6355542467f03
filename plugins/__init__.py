"""In-repo industry plugins. Each subpackage exports ``plugin`` (see plugins/_template/)."""
