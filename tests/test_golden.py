"""Golden playthroughs: the referee's output is unchanged (regenerate: scripts/golden.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "golden.py"


def test_playthroughs_match_golden_files() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ok tests/golden/desserts-demo.jsonl" in run.stdout
