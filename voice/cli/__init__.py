"""The ``orderup`` command line: one module per command (each exposes ``register(subparsers)``),
the parser in :mod:`voice.cli.main`, the shared flags and the typed options built from them in
:mod:`voice.cli.options`, what commands print in :mod:`voice.cli.output`."""
