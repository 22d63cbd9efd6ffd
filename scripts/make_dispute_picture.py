"""Draw the README's close-call picture from the bundled demo recording.

Runs ``orderup demo --disputes`` (the whole recording through the table, every close call
drawn) and keeps the picture of the demo's tie, Maya and Priya calling "got it" 20 ms apart,
as docs/close-call.png.

    python scripts/make_dispute_picture.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIE = "close-call-003.png"
"""The demo's third close call: its 20 ms tie at 64.3 s."""


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([sys.executable, "-m", "voice.cli", "demo", "--json", "--disputes", folder],
                       check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        shutil.copy(Path(folder) / TIE, ROOT / "docs" / "close-call.png")
    print(f"wrote {ROOT / 'docs' / 'close-call.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
