"""sessionstore: an append-only, pi-compatible store for coding-agent sessions."""

__version__ = "0.1.0"
