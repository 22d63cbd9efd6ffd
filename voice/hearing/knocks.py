"""Knocks and their ring: cutlery on a plate is not a call, and must not swallow the next one.

An utterance normally ends after `end_silence_ms` without an active hop; a knock — a sound of
at most `knock_ms` with less than `knock_speech_ms` of speech-like sound in it
(:func:`voice.audio.frames.speech_like_frames`) — ends after only `knock_silence_ms`. A call
right after a knock then has its own onset, not the knock's, and the knock is no call
(:meth:`voice.table.pipeline.Ears.is_knock`). A loud knock rings on for a while in a room; a
call that rises out of its ring (:meth:`Knocks.call_out_of_ring`) ends the knock there and has
its own onset too. Knocks that follow each other, or clatter, may keep an utterance going
until a call comes; where its first `knock_lead_ms` held no speech-like sound, the call found
in it when it ends (:meth:`Knocks.call_after_knocks`) is an utterance of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from voice.audio.frames import SPEECH_FRAME, speech_like_frames, speech_like_ms
from voice.hearing.history import History, ms_samples

RISE_DB = 6.0
"""A call's first sounds rise this far over the quietest moment before them."""
TROUGH_MS = 100.0
"""How far before a rise its quietest moment is looked for."""

if TYPE_CHECKING:
    from voice.hearing.onsets import OnsetConfig


class Knocks:
    """Per mic, whether the utterance in progress is a knock, and where a call rises out of
    its ring; keeps each utterance's power over the floor per hop while it may be ringing."""

    def __init__(self, channels: int, cfg: OnsetConfig) -> None:
        self._hop = cfg.hop_samples
        self._knock = ms_samples(cfg.knock_ms)
        self._silence = ms_samples(cfg.knock_silence_ms)
        self._speech_ms = cfg.knock_speech_ms
        self._peak_hops = round(cfg.knock_peak_ms / cfg.hop_ms)
        self._decay_hops = round(cfg.knock_decay_ms / cfg.hop_ms)
        self._ring_hops = round(cfg.knock_ring_ms / cfg.hop_ms)
        self._lead = ms_samples(cfg.knock_lead_ms)
        self._gamma = 10 ** (cfg.cusum_ratio_db / 10)
        # per hop of an utterance that may still be a knock ringing: its power over the floor
        self._ring: list[list[float] | None] = [None] * channels
        # per mic: whether the utterance's first `knock_lead_ms` held no speech-like sound
        # (None: not heard that long yet)
        self._knocks_first: list[bool | None] = [None] * channels

    def begin(self, ch: int, white: np.ndarray, noise: np.ndarray) -> None:
        """A new utterance on `ch`: its whitened signal and noise power over its first whole
        hops."""
        over = white**2 / np.maximum(noise, 1e-30)
        self._ring[ch] = over.reshape(-1, self._hop).mean(axis=1).tolist()
        self._knocks_first[ch] = None

    def hear_lead(self, ch: int, onset: int, e: int, raw: History) -> None:
        """Once the utterance on `ch` from `onset` has been heard to `e`, `knock_lead_ms` or
        more: note whether that much of its start held no speech-like sound."""
        if self._knocks_first[ch] is None and e - onset >= self._lead:
            lead = raw.get(onset, onset + self._lead)[:, ch]
            self._knocks_first[ch] = not speech_like_frames(lead).any()

    def may_split(self, ch: int) -> bool:
        """Whether the utterance on `ch` may still end as knocks with a call after them
        (:meth:`call_after_knocks`): its start has not been heard to hold speech."""
        return self._knocks_first[ch] is not False

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
        return speech_like_ms(raw.get(onset, last_active)[:, ch]) < self._speech_ms

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
        if speech_like_ms(raw.get(onset, e)[:, ch]) >= self._speech_ms:
            self._ring[ch] = None
            return None
        return onset + low * self._hop

    def call_after_knocks(self, ch: int, onset: int, end: int, raw: History,
                          band: History) -> int | None:
        """Where a call begins in the utterance on `ch` from `onset` to `end`, when its first
        `knock_lead_ms` or more held no speech-like sound: knocks, or clatter ringing on, kept
        it going until the call came. The call begins at the likeliest rise in power
        (:func:`rise`, on `band`, the high-passed mics) in the `knock_lead_ms` before its first
        speech-like sound (a call's first sounds may be too faint to be speech-like); None
        when its speech-like sound starts sooner, or there is none."""
        if not self._knocks_first[ch]:
            return None
        speech = speech_like_frames(raw.get(onset, end)[:, ch])
        if not speech.any():
            return None
        # a frame is speech-like against the loudest it is judged with: none of the start
        # was against the start's loudest, so none is against the whole's, but perhaps the
        # last frame, now that the frame after it counts as its neighbour
        voiced = onset + int(np.argmax(speech)) * SPEECH_FRAME
        if voiced - onset < self._lead:
            return None
        start = voiced - self._lead
        x = band.get(start, min(end, voiced + self._lead))[:, ch]
        step = rise(x, self._hop, self._lead + SPEECH_FRAME)
        return None if step is None else start + step


def rise(x: np.ndarray, hop: int, latest: int) -> int | None:
    """Where the sound in `x` rises, no later than sample `latest`; None when it does not.

    The likeliest step up in power comes first: the split of `x` into two parts, each of
    constant power and at least a `hop` long, the later louder, under which `x` is likeliest
    (Gaussian, its maximum-likelihood change point). That lands where the power has grown
    most, in a call's first vowel; the rise begins before it, so from there it goes back a
    hop at a time while the hop is `RISE_DB` over the quietest hop in the `TROUGH_MS` before
    the step."""
    energy = np.concatenate(([0.0], np.cumsum(np.square(x, dtype=np.float64))))
    n = x.size
    t = np.arange(hop, min(latest, n - hop) + 1)
    if t.size == 0:
        return None
    before = energy[t] / t + 1e-30
    after = (energy[n] - energy[t]) / (n - t) + 1e-30
    likelihood = np.where(after > before, -t * np.log(before) - (n - t) * np.log(after), -np.inf)
    best = int(np.argmax(likelihood))
    if not np.isfinite(likelihood[best]):
        return None
    at = int(t[best])
    ends = np.arange(at, max(hop, at - ms_samples(TROUGH_MS)) - 1, -hop)
    hop_power = energy[ends] - energy[ends - hop]
    quiet = hop_power <= 10 ** (RISE_DB / 10) * hop_power.min()  # the quietest at least
    return int(ends[np.argmax(quiet)])
