"""Real people's voices in the benchmark (issue 28): recordings of ``../shared/real_speech``
decoded by every recogniser side by side: clean, heard across a room, and at 10 dB in babble
of synthesised voices and in babble of real ones.

The clips, the speakers' parts (every third speaker held out, never tuned on), the
conditions and the grammars are those of scripts/measure_recognition.py: one-word calls
against Miss Poutine's grammar and against one-word commands, every other word as a word
that is not a call, the sentences against every grammar. The bench takes the manifest's first
clips of each word in each part (:data:`PER_WORD`) and every sentence, and decodes them with
PocketSphinx and its grammar, PocketSphinx's free language model (the baseline) and
Whisper held to the grammar (orderup's default), where its model is installed.
`scripts/measure_recognition.py --split real` measures every clip.
"""

from __future__ import annotations

from dataclasses import asdict
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import measure_recognition as mr

CONDITIONS = {"full": ("clean", "room", "babble", "real-babble"), "quick": ("clean",)}
PER_WORD = {"full": 2, "quick": 1}
"""Clips of each word in each part the bench decodes, per scene set."""
STRIDE = {"full": 1, "quick": 3}
"""Of those, every Nth (the quick set: 29 clips, every kind of clip in both parts)."""


def measure(set_name: str, jobs: int, backends: tuple[str, ...],
            root: Path = mr.REAL_SPEECH) -> list[dict[str, Any]]:
    """One record per clip, condition, grammar and backend (backend, part, noise, grammar,
    kind — call, word or sentence —, text, heard, right, accepted, latency_s); none where the
    recordings are not at `root`."""
    if not (root / "manifest.tsv").is_file():
        return []
    clips = mr.per_word(mr.real_clips(root), PER_WORD[set_name])[:: STRIDE[set_name]]
    chunks = [tuple(clips[i::8]) for i in range(8)]
    work = [(chunk, noise, backend, str(root), False) for noise in CONDITIONS[set_name]
            for backend in backends for chunk in chunks]
    with Pool(jobs, mr._init, (backends, "{}")) as pool:
        results = [r for rs in pool.map(mr.run_real, work) for r in rs]
    return [{k: v for k, v in asdict(r).items() if k != "record"} for r in results]
