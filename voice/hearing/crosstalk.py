"""Crosstalk suppression: other players' voices turned down in a call before it is decoded.

At a table every mic hears every player: its own loudest, the others some 5-20 dB lower
and smeared by the room. When two players call at once ("got it!" 100 ms after "got it!"),
each call's segment holds the other's voice, and the recogniser tries to fit both into one
phrase. The onset detector knows who was talking when (their utterances' spans) and how
much of each player reaches each mic (its learned crosstalk coupling, a power ratio), so
the other voices' share of each time-frequency bin of the call can be estimated from what
their own mics picked up, and taken out by spectral subtraction:

    N(t, f) = sum over talking players c of coupling[c] * |X_c(t, f)|^2 where their mic
              heard that bin louder than this one, held at its peaks and decaying like the
              room's tail (`decay_db_per_s`)
    gain(t, f) = max(1 - oversubtract * N / |X(t, f)|^2, floor) ** 0.5

on a 32 ms short-time Fourier transform (long enough to hold the extra delay and early
reflections of the path from the other player to this mic). The bins where the call's
own player dominates are left as they are; those that are mostly the other voice are
turned down by up to `floor_db`. Where no other player was talking the audio comes back
bit for bit.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import istft, stft

from voice.audio.frames import PIPELINE_RATE_HZ

WINDOW = 512
"""STFT window (32 ms at 16 kHz), hop a quarter of it."""
_HOP = WINDOW // 4


def suppress(
    own: np.ndarray,
    others: np.ndarray,
    coupling: np.ndarray,
    talking: np.ndarray,
    *,
    oversubtract: float,
    floor_db: float,
    decay_db_per_s: float,
) -> np.ndarray:
    """`own` (n samples, one mic) with the other players' voices turned down.

    `others` (n, k): the other talking players' own mics over the same samples; `coupling`
    (k,): how much of each of them reaches this mic (power ratio); `talking` (n, k): when
    each was talking. Returns float32 of `own`'s length; `own` itself where nobody was."""
    n = own.shape[0]
    if n < WINDOW or not talking.any() or oversubtract <= 0:
        return own.astype(np.float32)
    args = {"fs": PIPELINE_RATE_HZ, "nperseg": WINDOW, "noverlap": WINDOW - _HOP}
    _, _, spec = stft(own.astype(np.float64), **args)
    frames = spec.shape[1]
    # a player counts in a frame (centred on frame * hop) when talking anywhere in it
    count = np.concatenate([np.zeros((1, talking.shape[1])), np.cumsum(talking, axis=0)])
    centre = np.arange(frames) * _HOP
    lo, hi = np.clip(centre - WINDOW // 2, 0, n), np.clip(centre + WINDOW // 2, 0, n)
    on = (count[hi] - count[lo] > 0).T.astype(float)  # (k, frames)
    power = np.abs(spec) ** 2
    leak = np.zeros_like(power)
    for j in range(others.shape[1]):  # one mic at a time: a long call on many mics is large
        _, _, theirs = stft(others[:, j].astype(np.float64), **args)
        theirs = np.abs(theirs) ** 2
        # a bin is another player's only where their mic heard it louder than this one did
        # (each player is loudest on their own mic): a neighbour's mic that only picked up
        # this call, a copy of it taken for speech there, adds nothing
        leak += coupling[j] * theirs * (theirs > power) * on[j]
    decay = 10 ** (-decay_db_per_s * _HOP / PIPELINE_RATE_HZ / 10)
    for t in range(1, frames):  # the room keeps ringing after the other voice stops
        np.maximum(leak[:, t], leak[:, t - 1] * decay, out=leak[:, t])
    gain = np.maximum(1 - oversubtract * leak / np.maximum(power, 1e-20), 10 ** (floor_db / 10))
    # only what is taken out goes through the inverse transform: audio no frame touched
    # comes back bit for bit
    _, removed = istft(spec * (np.sqrt(gain) - 1), **args)
    return (own + removed[:n]).astype(np.float32)
