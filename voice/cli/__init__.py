"""The ``orderup`` command line: one module per command (each exposes ``register(subparsers)``),
the parser in :mod:`voice.cli.main`."""
