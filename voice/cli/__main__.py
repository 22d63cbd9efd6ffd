"""``python -m voice.cli``: the ``orderup`` command."""

import sys

from voice.cli.main import main

sys.exit(main())
