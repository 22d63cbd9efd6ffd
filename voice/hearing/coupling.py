"""Crosstalk coupling: how much each seat hears of each other seat, which of a mic's sound is
its own player's, and what of an utterance's audio is turned down before it is decoded.

Close-talk geometry: a player's voice reaches their own mic several dB louder than any other,
so what mic m hears of a player at mic c is c's band power times a steady coupling c→m. Mic
m's sound is its own when it exceeds every other talking mic's power (an idle mic's sound is
noise or the app's echo, which reach every mic alike) times its coupling by `own_margin_db`
(`onset_own_margin_db` for an onset's first hops, which may be weak): this holds for a player
who talks over someone else (their own mic is loud with them), not for the copy of that
someone. Couplings start from a calibration's `crosstalk_db` (else `crosstalk_initial_db`)
and are learned on while one player talks alone.

Sound from afar (the next table's babble, the room's noise, the app's residual echo) reaches
every mic alike and no one is talking when it rises, so no crosstalk is expected of it: the
other mics are its reference instead. With `shared_min_mics` mics or more, a mic's sound is
not its own while it stands no more than `shared_margin_db` further over its band floor than
the quietest other mic does over its own, once the crosstalk each is expected to hear is
taken from it (on the other mic, of this one's player; on both, of the players already
talking): a player's call is that much louder on their own mic than anywhere else, babble
is not, and a second caller is not mistaken for the first one's bleed, which reaches every
mic. With two mics the only reference may be the other
caller, so the rule is not applied.

A segment's audio has the other players who talked meanwhile turned down by their learned
coupling (:func:`voice.hearing.crosstalk.suppress`), then everything more than
`own_span_keep_ms` before the player's first or after their last own sound turned down by
`not_own_attenuation_db`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from voice.hearing.crosstalk import suppress
from voice.hearing.history import History, ms_samples

if TYPE_CHECKING:
    from collections.abc import Sequence

    from voice.hearing.onsets import OnsetConfig


class Coupling:
    """The [source, mic] band power ratios between seats, learned; per sample, how far each
    mic's sound was over the crosstalk expected in it; and when each mic's player talked."""

    def __init__(
        self, channels: int, cfg: OnsetConfig, crosstalk_db: np.ndarray | None = None
    ) -> None:
        self._cfg = cfg
        self._channels = channels
        self._hop = cfg.hop_samples
        self._window = max(self._hop, ms_samples(cfg.crosstalk_window_ms))
        lo_db, hi_db = cfg.crosstalk_range_db
        self._range = (10 ** (lo_db / 10), 10 ** (hi_db / 10))
        self._learn_above = 10 ** (cfg.crosstalk_learn_above_db / 10)
        self._rate = min(1.0, cfg.hop_ms / cfg.crosstalk_learn_time_ms)
        self._decay = 10 ** (-cfg.crosstalk_decay_db_per_s * cfg.hop_ms / 1000 / 10)
        self._own_margin = 10 ** (cfg.own_margin_db / 10)
        self._plain_own_margin = 10 ** (cfg.plain_own_margin_db / 10)
        self._onset_own_margin = 10 ** (cfg.onset_own_margin_db / 10)
        self._shared_margin = 10 ** (cfg.shared_margin_db / 10)
        self._keep = ms_samples(cfg.own_span_keep_ms)
        self._not_own_gain = 10 ** (-cfg.not_own_attenuation_db / 20)
        seed_db = (  # calibrated: [source][mic]; learned on from the seed
            np.full((channels, channels), cfg.crosstalk_initial_db) if crosstalk_db is None
            else np.asarray(crosstalk_db, float)
        )
        self.matrix = np.clip(10 ** (seed_db / 10), *self._range)
        """[source, mic] band power ratio: what mic hears of the source's player."""
        self._band_floor = np.full(channels, np.nan)
        self._src_hold = np.zeros(channels)  # band power held at peaks, decaying like a room
        self._log = History(channels)  # per sample: its hop's power over crosstalk
        self._spans: list[list[list[int]]] = [[] for _ in range(channels)]  # [onset, end]

    def own(
        self, band: History, e: int, talking: np.ndarray, speaking: Sequence[bool]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per mic: whether its sound in the hop ending at `e` is its own, against the
        crosstalk expected from the other `talking` mics' held and their present power; and
        its band power. Logs the held ratio per sample (for :meth:`own_onset` and a
        segment's audio) and learns the couplings.

        The room keeps a copy ringing after its source has dropped, so the held ratio compares
        with the sources' power held at peaks and decaying at `crosstalk_decay_db_per_s` (it
        judges onsets and what an utterance was); the present one only keeps a player's
        utterance going (a second caller's words right after a loud one of the first).
        Neither is the mic's own where it hears what every mic hears alike (:meth:`_alike`).
        Each coupling is learned (time constant `crosstalk_learn_time_ms` of learning hops)
        while its source is `speaking`, the loudest and `crosstalk_learn_above_db` over its
        band floor, and the other mic is idle; mics of different gains are learned as they are.
        """
        x = band.get(e - self._window, e)
        p = np.einsum("nc,nc->c", x, x) / x.shape[0] + 1e-20
        self._band_floor = np.where(np.isnan(self._band_floor), p, self._band_floor)
        self._src_hold = np.maximum(p, self._src_hold * self._decay)

        def over_crosstalk(source_power: np.ndarray) -> np.ndarray:
            crosstalk = self.matrix * np.where(talking, source_power, 0.0)[:, None]
            np.fill_diagonal(crosstalk, 0.0)
            return p / np.maximum(crosstalk.max(axis=0), 1e-30)

        alike = self._alike(p, talking)
        held = np.where(alike, 0.0, over_crosstalk(self._src_hold))
        now = np.where(alike, 0.0, over_crosstalk(p))
        self._log.append(np.repeat(held[None, :].astype(np.float32), self._hop, axis=0))
        src = int(np.argmax(p))
        if speaking[src] and p[src] > self._learn_above * self._band_floor[src]:
            idle = ~talking
            idle[src] = False
            log_c = np.log(self.matrix[src, idle])
            log_c += self._rate * (np.log(p[idle] / p[src]) - log_c)
            lo, hi = self._range
            self.matrix[src, idle] = np.clip(np.exp(log_c), lo, hi)
        return held > self._own_margin, now > self._own_margin, p

    def _alike(self, p: np.ndarray, talking: np.ndarray) -> np.ndarray:
        """Per mic, whether its band power `p` is no more over its band floor than the
        quietest other mic's is over its own, give or take `shared_margin_db`, once the
        crosstalk expected on each (of this mic's player, and of the other `talking` players,
        held at their peaks) is taken from it: sound every mic hears alike (never with fewer
        than `shared_min_mics` mics)."""
        n = self._channels
        if n < self._cfg.shared_min_mics:
            return np.zeros(n, bool)
        expected = self.matrix * np.where(talking, self._src_hold, 0.0)[:, None]  # [source, mic]
        np.fill_diagonal(expected, 0.0)
        others = np.broadcast_to(expected, (n, n, n)).copy()  # [mic, source, reference]
        others[np.arange(n), np.arange(n), :] = 0.0
        heard = np.maximum(self.matrix * p[:, None], others.max(axis=1))  # [mic, reference]
        beyond = np.maximum(p[None, :] - heard, 1e-20)
        over = beyond / self._band_floor[None, :]
        np.fill_diagonal(over, np.inf)
        mine = np.maximum(p - expected.max(axis=0), 1e-20)
        return mine / self._band_floor <= over.min(axis=1) * self._shared_margin

    def plainly_loud(self, band_power: np.ndarray, ratio: float) -> np.ndarray:
        """Per mic, whether the hop :meth:`own` last judged is loud on its plain band power
        (`band_power`, as :meth:`own` returned it): `ratio` over its band floor, and its own
        by `plain_own_margin_db` over the crosstalk held from the talking mics, which a
        reverberant room's copy of a caller does not reach."""
        held = self._log.get(self._log.end - 1, self._log.end)[0]
        return (band_power > self._band_floor * ratio) & (held > self._plain_own_margin)

    def learn_floor(self, quiet: np.ndarray, band_power: np.ndarray, alpha: float) -> None:
        """Fold the `quiet` mics' band power into their band floor, at rate `alpha`."""
        self._band_floor += np.where(quiet, alpha * (band_power - self._band_floor), 0.0)

    def own_onset(self, ch: int, onset: int, stop: int) -> bool:
        """Whether any of `ch`'s sound over [onset, stop) was its own, by the onset's margin."""
        return bool(np.any(self._log.get(onset, stop)[:, ch] > self._onset_own_margin))

    def talk(self, ch: int, onset: int) -> None:
        """`ch`'s player began an utterance at `onset`."""
        self._spans[ch].append([onset, -1])  # -1: still talking

    def segment_audio(self, ch: int, end: int, first: int, mics: np.ndarray) -> np.ndarray:
        """End `ch`'s utterance at `end`; return its audio (`mics` from sample `first`, every
        mic) with the other players who talked meanwhile turned down, then turned down outside
        its own sound (:attr:`voice.hearing.onsets.Segment.samples`)."""
        self._spans[ch][-1][1] = end
        return self._outside_own_turned_down(ch, first, self._others_turned_down(ch, first, mics))

    def trim_before(self, index: int) -> None:
        self._log.trim_before(index)
        for spans in self._spans:  # in time order, only the last one still open
            while spans and 0 <= spans[0][1] <= index:
                spans.pop(0)

    def _others_turned_down(self, ch: int, first: int, mics: np.ndarray) -> np.ndarray:
        """Mic `ch`'s audio (`mics` from sample `first`) with the other players who talked
        meanwhile turned down (:func:`voice.hearing.crosstalk.suppress`), by their learned
        coupling."""
        n = mics.shape[0]
        talking = np.zeros((n, self._channels), bool)
        for c, spans in enumerate(self._spans):
            for onset, end in spans if c != ch else ():
                talking[max(0, onset - first) : n if end < 0 else max(0, end - first), c] = True
        others = np.flatnonzero(talking.any(axis=0))
        cfg = self._cfg
        return suppress(
            mics[:, ch], mics[:, others], self.matrix[others, ch], talking[:, others],
            oversubtract=cfg.crosstalk_oversubtract, floor_db=cfg.crosstalk_floor_db,
            decay_db_per_s=cfg.crosstalk_decay_db_per_s,
        )

    def _outside_own_turned_down(self, ch: int, first: int, audio: np.ndarray) -> np.ndarray:
        """`audio` (mic `ch` from sample `first`) turned down outside its own sound, give or
        take `own_span_keep_ms`, with hop-long ramps; unchanged when none of it was its own."""
        own = np.flatnonzero(self._log.get(first, first + audio.size)[:, ch] > self._own_margin)
        if own.size == 0:
            return audio
        gain = np.full(audio.size, self._not_own_gain)
        gain[max(0, own[0] - self._keep) : own[-1] + self._keep] = 1.0
        ramp = np.hanning(2 * self._hop + 1)
        gain = np.convolve(np.pad(gain, self._hop, mode="edge"), ramp / ramp.sum(), mode="valid")
        return (audio * gain).astype(np.float32)
