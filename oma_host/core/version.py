"""The package version, in a module that imports nothing, so anything can read it cheaply."""

__version__ = "0.1.0"
