"""Realistic, reproducible multichannel table scenes with known truth (issue 7), and the unit
tests' dry mixes: the one scene simulator of the tests, the benchmark and the demo recording.

A scene is a short recording of a game table: a shoebox room (pyroomacoustics image
sources for the early reflections, a seeded stochastic tail for the late reverberation),
a round table with 2–8 seats, one microphone 20–40 cm in front of each player, espeak-ng
and flite talkers (several voices, speeds and pitches; shouting louder and clipping at
times; flite's voices are built from recordings of people, espeak-ng's are formant
synthesis, whose sounds PocketSphinx's model does not always take for speech), the
app's narration from a laptop loudspeaker on the table, and background babble (other
tables' talkers, synthesised or, in the ``real-babble`` set, people's recorded sentences) and
clatter (cutlery, plates) at a chosen SNR. Everything is drawn from
one seed: the same seed gives the same samples, so the same WAV bytes.

Scene kinds, each with what the referee should conclude (``truth["expected"]``):

- ``race``: 2–3 players shout the same call at onset gaps of 0–300 ms; expected: the
  calls in onset order on their own mics (:func:`first_callers` for any tie window).
- ``commands``: one player says an in-grammar phrase (a call or a card from the decks).
- ``chatter``: out-of-grammar table talk; expected: no call.
- ``narration``: the app speaks from the loudspeaker while (or just after) a player calls;
  the app's own utterance is marked ``role: "app"`` and must not count.

Modules, in the order they build on each other: ``speech`` (synthesis and its one cache),
``phrases`` (what is said), ``recorded`` (people's recordings and their split into tune and
held-out speakers), ``rooms`` (layout and impulse responses), ``conditions`` (how a
scene sounds, the splits), ``noises`` (babble, clatter), ``render`` (mixing a scene and its
truth), ``sessions`` (the scene kinds, a scripted game), ``sets`` (the named scene sets,
files); ``dry`` is the unit tests' room-less mix (:func:`mix_scene`).

Entry points (sibling scripts ``import scenes``, tests ``from scripts.scenes import ...``):
:func:`make_scene`, :func:`render_session` (a whole scripted game, for the demo recording),
:func:`calibration_take` (what ``orderup calibrate`` records at a scene's table),
:func:`scene_set`, :func:`write_scene`, :func:`first_callers`, :func:`synth`; for the unit
tests :func:`spoken` and :func:`mix_scene`.

Not modelled: the table top as a reflector, directivity of mouths and mics, clock drift.
"""

from .conditions import CLIP_MODES, NOISE_KINDS, SPLITS, Condition, Pool
from .dry import BleedSpec, DryScene, TruthCall, mix_scene
from .noises import BABBLE_TALKERS, clatter_hit
from .phrases import CALLS, CHATTER, RACE_CALLS, command_phrases, narration_lines
from .recorded import (
    REAL_PARTS,
    REAL_SPEECH,
    Clip,
    have_recordings,
    part_of,
    read_clip,
    real_clips,
    sentences,
)
from .render import (
    LEVEL_SPREAD_DB,
    MIC_FLOOR_DBFS,
    REF_DISTANCE_M,
    SHOUT_DB,
    SOFT_KNEE,
    SPEECH_PEAK,
    TIE_WINDOW_MS,
    Scene,
    first_callers,
)
from .rooms import (
    ISM_MAX_ORDER,
    SPEED_OF_SOUND_M_S,
    Layout,
    Room,
    delays_samples,
    impulse_responses,
    ism_order,
    own_mic_response,
    table_layout,
)
from .sessions import (
    KINDS,
    LEAD_S,
    SEAT_NAMES,
    TAIL_S,
    Line,
    calibration_take,
    make_scene,
    render_session,
)
from .sets import (
    FLITE_SHARE,
    RACE_GAPS_MS,
    RECORDED_BABBLE_SET,
    SET_NAMES,
    SNRS_DB,
    SceneSpec,
    scene_set,
    write_scene,
)
from .speech import (
    APP_VOICE,
    ESPEAK,
    FLITE,
    ONSET_FRACTION,
    RATE_HZ,
    Voice,
    spoken,
    synth,
    synthesizer,
    voiced_span,
)

__all__ = [
    "APP_VOICE", "BABBLE_TALKERS", "CALLS", "CHATTER", "CLIP_MODES", "ESPEAK", "FLITE",
    "FLITE_SHARE", "ISM_MAX_ORDER", "KINDS", "LEAD_S", "LEVEL_SPREAD_DB", "MIC_FLOOR_DBFS",
    "NOISE_KINDS", "ONSET_FRACTION", "RACE_CALLS", "RACE_GAPS_MS", "RATE_HZ", "REAL_PARTS",
    "REAL_SPEECH", "RECORDED_BABBLE_SET", "REF_DISTANCE_M", "SEAT_NAMES", "SET_NAMES", "SHOUT_DB",
    "SNRS_DB", "SOFT_KNEE", "SPEECH_PEAK", "SPEED_OF_SOUND_M_S", "SPLITS", "TAIL_S",
    "TIE_WINDOW_MS", "BleedSpec", "Clip", "Condition", "DryScene", "Layout", "Line", "Pool",
    "Room", "Scene", "SceneSpec", "TruthCall", "Voice", "calibration_take", "clatter_hit",
    "command_phrases", "delays_samples", "first_callers", "have_recordings", "impulse_responses",
    "ism_order", "make_scene", "mix_scene", "narration_lines", "own_mic_response", "part_of",
    "read_clip", "real_clips", "render_session", "scene_set", "sentences", "spoken", "synth",
    "synthesizer", "table_layout", "voiced_span", "write_scene",
]
