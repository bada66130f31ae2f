"""envglot's version (one home: the package re-exports it; the tables' TOML cache is keyed by it)."""

__version__ = "0.1.0"
