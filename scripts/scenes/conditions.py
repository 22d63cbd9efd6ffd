"""How a scene sounds (:class:`Condition`), and what each split may draw it from
(:data:`SPLITS`: the tune and holdout splits' voices, speeds, pitches and rooms are disjoint)."""

from __future__ import annotations

from dataclasses import dataclass

from .rooms import Room
from .speech import Voice

NOISE_KINDS = ("babble", "clatter", "both")
BABBLE_VOICES = ("synthesised", "recorded")
"""Who talks at the other tables: synthesised talkers, or people's recorded sentences
(:mod:`.recorded`)."""
CLIP_MODES = ("none", "soft", "hard")


@dataclass(frozen=True)
class Pool:
    """What one split may draw from; the splits' voices, speeds, pitches and rooms are disjoint."""

    voices: tuple[str, ...]
    flite_voices: tuple[str, ...]
    speeds_wpm: tuple[int, ...]
    pitches: tuple[int, ...]
    rooms_m: tuple[tuple[float, float, float], ...]
    rt60s_s: tuple[float, ...]


SPLITS = {
    "tune": Pool(
        voices=tuple(
            f"{base}{variant}"
            for base in ("en-us", "en", "en-029", "en-gb-x-gbclan")
            for variant in ("", "+f3", "+m3")
        ),
        flite_voices=("flite:awb", "flite:slt"),
        speeds_wpm=(150, 175, 200),
        pitches=(35, 50, 65),
        rooms_m=((4.0, 3.5, 2.6), (5.5, 4.5, 2.7), (7.0, 5.5, 3.0)),
        rt60s_s=(0.2, 0.4, 0.6),
    ),
    "holdout": Pool(
        voices=tuple(
            f"{base}{variant}"
            for base in ("en-gb-scotland", "en-gb-x-gbcwmd")
            for variant in ("", "+f2", "+m5")
        ),
        flite_voices=("flite:rms", "flite:kal16"),
        speeds_wpm=(135, 215),
        pitches=(25, 80),
        rooms_m=((3.6, 3.2, 2.5), (8.5, 6.5, 3.2)),
        rt60s_s=(0.3, 0.5, 0.8),
    ),
}


@dataclass(frozen=True)
class Condition:
    """How a scene sounds: room, players' voices, shouting, noise. ``split`` is "tune",
    "holdout" (scene sets) or None (a scripted session). ``noise`` is set exactly when
    ``snr_db`` is. ``gap_ms`` (races only) fixes the gap between the first two callers;
    None draws it from 0–300 ms. ``babble`` is who talks in the babble (BABBLE_VOICES)."""

    room: Room
    voices: tuple[Voice, ...]
    split: str | None = "tune"
    shouted: bool = False
    clip: str = "none"
    snr_db: float | None = None
    noise: str | None = None
    gap_ms: float | None = None
    babble: str = "synthesised"

    def __post_init__(self) -> None:
        if not 2 <= len(self.voices) <= 8:
            raise ValueError(f"a table has 2-8 players, got {len(self.voices)} voices")
        if self.split is not None and self.split not in SPLITS:
            raise ValueError(f"split {self.split!r} is not one of {sorted(SPLITS)} or None")
        if self.clip not in CLIP_MODES:
            raise ValueError(f"clip {self.clip!r} is not one of {CLIP_MODES}")
        if self.babble not in BABBLE_VOICES:
            raise ValueError(f"babble {self.babble!r} is not one of {BABBLE_VOICES}")
        if (self.snr_db is None) != (self.noise is None) or self.noise not in (None, *NOISE_KINDS):
            raise ValueError(
                f"noise {self.noise!r} with snr_db {self.snr_db!r}: give both (noise one of "
                f"{NOISE_KINDS}) or neither"
            )

    @property
    def n_players(self) -> int:
        return len(self.voices)
