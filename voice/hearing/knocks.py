"""Knocks and their ring: cutlery on a plate is not a call, and must not swallow the next one.

An utterance normally ends after `end_silence_ms` without an active hop; a knock — a sound of
at most `knock_ms` with less than `knock_speech_ms` of speech-like sound in it
(:func:`voice.audio.frames.speech_like_frames`) — ends after only `knock_silence_ms`. A call
right after a knock then has its own onset, not the knock's, and the knock, not a call, is
dropped by the recogniser. A loud knock rings on for a while in a room; a call that rises out
of its ring (:meth:`Knocks.call_out_of_ring`) ends the knock there and has its own onset too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from voice.audio.frames import SPEECH_FRAME, speech_like_frames
from voice.hearing.history import History, ms_samples

if TYPE_CHECKING:
    from voice.hearing.onsets import OnsetConfig


class Knocks:
    """Per mic, whether the utterance in progress is a knock, and where a call rises out of
    its ring; keeps each utterance's power over the floor per hop while it may be ringing."""

    def __init__(self, channels: int, cfg: OnsetConfig) -> None:
        self._hop = cfg.hop_samples
        self._knock = ms_samples(cfg.knock_ms)
        self._silence = ms_samples(cfg.knock_silence_ms)
        self._speech = ms_samples(cfg.knock_speech_ms)
        self._peak_hops = round(cfg.knock_peak_ms / cfg.hop_ms)
        self._decay_hops = round(cfg.knock_decay_ms / cfg.hop_ms)
        self._ring_hops = round(cfg.knock_ring_ms / cfg.hop_ms)
        self._gamma = 10 ** (cfg.cusum_ratio_db / 10)
        # per hop of an utterance that may still be a knock ringing: its power over the floor
        self._ring: list[list[float] | None] = [None] * channels

    def begin(self, ch: int, white: np.ndarray, noise: np.ndarray) -> None:
        """A new utterance on `ch`: its whitened signal and noise power over its first whole
        hops."""
        over = white**2 / np.maximum(noise, 1e-30)
        self._ring[ch] = over.reshape(-1, self._hop).mean(axis=1).tolist()

    def ends(self, ch: int, onset: int, last_active: int, quiet_for: int, raw: History) -> bool:
        """Whether the utterance on `ch` ends now as a knock: quiet for `knock_silence_ms`
        (to the hop) and a knock (:meth:`knocked`)."""
        return 0 <= quiet_for - self._silence < self._hop and self.knocked(
            ch, onset, last_active, raw
        )

    def knocked(self, ch: int, onset: int, last_active: int, raw: History) -> bool:
        """Whether the utterance on `ch` from `onset` is a knock: its sound, up to
        `last_active`, lasted no longer than `knock_ms`, less than `knock_speech_ms` of it
        speech-like (`raw` is the mics' audio)."""
        if last_active - onset > self._knock:
            return False
        speech = speech_like_frames(raw.get(onset, last_active)[:, ch])
        return int(speech.sum()) * SPEECH_FRAME < self._speech

    def call_out_of_ring(
        self, ch: int, power: float, onset: int, e: int, raw: History
    ) -> int | None:
        """Where a call rises out of a knock's ring on `ch` (the utterance from `onset`), given
        the power over the floor of the hop ending at `e`; None while there is none. The
        utterance so far must be a knock ringing: its loudest sound in its first
        `knock_peak_ms`, fallen `cusum_ratio_db` within `knock_decay_ms` after it, none of it
        speech-like, not over `knock_ring_ms` long; and its last two hops `cusum_ratio_db`
        over the trough they rise from, at least `knock_silence_ms` after the peak (a
        plosive's burst and aspiration end sooner, and a call's first sound is its loudest
        only when it is one). The call begins at the trough its rise starts from."""
        ring = self._ring[ch]
        if ring is None:
            return None
        ring.append(power)
        p = np.asarray(ring)
        peak = int(np.argmax(p[: self._peak_hops + 1]))
        decayed = peak + self._decay_hops
        if len(p) > self._ring_hops or p[:-2].max() > p[peak] or (
                len(p) > decayed and p[decayed] * self._gamma > p[peak]):
            self._ring[ch] = None  # not a knock: a call from its start, or a long noise
            return None
        if (len(p) - 2 - peak) * self._hop < self._silence:
            return None
        low = len(p) - 3  # the trough the last hops rise from
        while low > peak and p[low - 1] <= p[low]:
            low -= 1
        if p[-2:].min() < self._gamma * p[low]:
            return None
        speech = speech_like_frames(raw.get(onset, e)[:, ch])
        if int(speech.sum()) * SPEECH_FRAME >= self._speech:
            self._ring[ch] = None
            return None
        return onset + low * self._hop
