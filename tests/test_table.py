"""The table loop on real recordings: audio → onsets → recognition → arbitration → rules."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from referee_helpers import in_process

from engine.core import Event
from scripts.scenes import mix_scene, spoken
from voice.audio.files import WavSource, write_wav
from voice.audio.frames import PIPELINE_RATE_HZ, AudioFrame
from voice.audio.live import MicInput
from voice.hearing.onsets import Segment, SpeechEnd
from voice.recognition.grammar import Grammar
from voice.recognition.interface import (
    DEFAULT_BACKEND,
    SYNTHESISED_BACKEND,
    Hypothesis,
    create_recognizer,
)
from voice.table.journal import Journal, Setup, restore
from voice.table.loop import TableLoop
from voice.table.options import DessertsOptions, Options
from voice.table.pipeline import CALL_OVER_NOISE_DB, Ears, Heard
from voice.table.referee import Referee
from voice.table.setup import TableSetup, calibrate

RATE = PIPELINE_RATE_HZ
PLAYERS = ("Ann", "Bob")


def recording(tmp_path: Path) -> Path:
    """Ann and Bob race for Rocky (Ann 150 ms first); Ann serves the favorite."""
    calls = [
        (0, spoken("got it", voice="en-us", amplitude=0.6), int(1.5 * RATE)),
        (1, spoken("got it", voice="en-gb", pitch=30, amplitude=0.6), int(1.65 * RATE)),
        (0, spoken("rocky road", voice="en-us", amplitude=0.6), int(3.2 * RATE)),
    ]
    scene = mix_scene(calls, 2, noise_snr_db=30.0, seed=3, length=int(5.0 * RATE))
    path = tmp_path / "table.wav"
    write_wav(path, scene.audio, RATE)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("calibrated", [False, True])
def test_replay_referees_a_recorded_game(tmp_path: Path, calibrated: bool) -> None:
    """Alone, or with the table's calibration beside the recording (FILE.table.json)."""
    wav = recording(tmp_path)
    if calibrated:
        TableSetup(PLAYERS, (MicInput(None, 0), MicInput(None, 1)), (-70.0, -70.0), (-25.0, -25.0),
                   ((0.0, -12.0), (-12.0, 0.0))).save(wav.with_suffix(".table.json"))
    stack = tmp_path / "stack.txt"
    stack.write_text("guests: Rocky\n")
    run = subprocess.run(
        [sys.executable, "-m", "voice.cli", "replay", str(wav), "--game", "desserts",
         "--players", ",".join(PLAYERS), "--stack", str(stack), "--json"],
        capture_output=True, text=True, check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    heard = [(h["player"], h["text"].removeprefix("i ")) for h in lines
             if h["type"] == "heard" and h["understood"]]
    assert heard == [("Ann", "got it"), ("Bob", "got it"), ("Ann", "rocky road")]
    first = next(e for e in lines if e["type"] == "first")
    assert first["players"] == ["Ann"]
    assert lines[-1]["type"] == "final"
    assert lines[-1]["players"]["Ann"] == {"guests": 1, "hand": 5, "dirty_dishes": 1}


@pytest.mark.slow
def test_replay_refuses_the_set_up_of_another_table(tmp_path: Path) -> None:
    wav = recording(tmp_path)
    setup = tmp_path / "other.json"
    TableSetup(("Ann", "Zoe"), (MicInput(None, 0), MicInput(None, 1))).save(setup)
    run = subprocess.run(
        [sys.executable, "-m", "voice.cli", "replay", str(wav), "--game", "desserts",
         "--players", ",".join(PLAYERS), "--setup", str(setup)],
        capture_output=True, text=True, check=False,
    )
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert "is the set-up of Ann, Zoe, not of Ann, Bob" in run.stderr


def loop_for(tmp_path: Path) -> TableLoop:
    setup = Setup("desserts", PLAYERS, {"guests": ("Rocky",)}, Options(DessertsOptions()), 1)
    game, state = setup.new_state()
    referee = Referee(game, state, Journal(str(tmp_path / "game.jsonl"), setup))
    return TableLoop(referee, create_recognizer("sphinx"), PLAYERS)


def test_loop_journals_every_step_and_resume_restores_it(tmp_path: Path) -> None:
    loop = loop_for(tmp_path)
    for frame in WavSource(recording(tmp_path)):
        loop.feed(frame)
    loop.finish()
    _, state, restored = restore(str(tmp_path / "game.jsonl"))
    assert len(restored.heard) == 3
    assert state.summary() == loop.referee.state.summary()
    assert state.summary()["players"]["Ann"]["guests"] == 1


@pytest.mark.slow
def test_calls_during_a_pause_are_heard_but_not_refereed(tmp_path: Path) -> None:
    loop = loop_for(tmp_path)
    items = []
    for frame in WavSource(recording(tmp_path)):
        if frame.start_sample == RATE:  # pause at 1.0 s, before the race
            loop.pause(frame.t_s)
        if frame.start_sample == 3 * RATE:  # resume at 3.0 s, before the serve
            loop.resume(frame.t_s)
        items += loop.feed(frame)
    items += loop.finish()
    heard = [i for i in items if type(i).__name__ == "Heard"]
    assert len(heard) == 3
    kinds = [getattr(i, "kind", None) for i in items]
    assert "first" not in kinds  # the race happened during the pause
    # Nobody won the call, so a serve is nothing Ann may say: her grammar of the moment
    # holds only "got it" and "pass", and her serve is heard but not understood.
    assert not heard[2].understood
    assert not any(getattr(i, "kind", None) == "collected" for i in items)
    assert loop.game_time(2.0) is None
    assert loop.game_time(4.0) == pytest.approx(2.0, abs=0.03)  # two seconds were paused


@pytest.mark.slow
def test_a_pause_inside_an_unfinished_phrase_does_not_cut_it(tmp_path: Path) -> None:
    """Ann wins the call, then serves "brownie and … whipped cream": the first part is
    unfinished, so the parts are joined."""
    call = spoken("got it", voice="en-us", amplitude=0.6)
    first = spoken("brownie and", voice="en-us", amplitude=0.6)
    rest = spoken("whipped cream", voice="en-us", amplitude=0.6)
    pause = int(0.6 * RATE)  # longer than the 300 ms that ends an utterance
    start = int(3.0 * RATE)
    scene = mix_scene([(0, call, int(1.0 * RATE)), (0, first, start),
                       (0, rest, start + len(first) + pause)], 2,
                      noise_snr_db=35.0, seed=5, length=int(6.5 * RATE))
    wav = tmp_path / "pause.wav"
    write_wav(wav, scene.audio, RATE)
    loop = loop_for(tmp_path)
    items = [i for frame in WavSource(wav) for i in loop.feed(frame)] + loop.finish()
    heard = [i for i in items if type(i).__name__ == "Heard"]
    assert [(h.player, h.text, h.understood) for h in heard] == [
        ("Ann", "got it", True), ("Ann", "brownie and whipped cream", True)]
    assert heard[1].onset_s == pytest.approx(start / RATE, abs=0.02)


@pytest.mark.slow
def test_a_server_not_understood_is_asked_to_say_it_again(tmp_path: Path) -> None:
    """Ann wins Rocky, then says something the recogniser cannot make out: the app asks her
    again (her serve time runs on); then her serve is heard."""
    calls = [
        (0, spoken("got it", voice="en-us", amplitude=0.6), int(1.5 * RATE)),
        (0, spoken("hold on a second", voice="en-us", amplitude=0.6), int(3.0 * RATE)),
        (0, spoken("rocky road", voice="en-us", amplitude=0.6), int(5.5 * RATE)),
    ]
    scene = mix_scene(calls, 2, noise_snr_db=30.0, seed=3, length=int(7.5 * RATE))
    wav = tmp_path / "again.wav"
    write_wav(wav, scene.audio, RATE)
    loop = loop_for(tmp_path)
    items = [i for frame in WavSource(wav) for i in loop.feed(frame)] + loop.finish()
    said = [(i.kind, i.say) for i in items if isinstance(i, Event) and i.say]
    assert said[:3] == [("first", "Ann first."), ("not_understood", "Ann, say that again?"),
                        ("served", "Ann takes Rocky.")], said


def test_utterances_are_decoded_in_onset_order(tmp_path: Path) -> None:
    """A short call that starts later but ends first waits for the long one before it: each
    utterance is decoded with the grammar of the state it was said in, which the earlier one
    may change (Chaosteria's kitchen after a serve)."""
    long = spoken("chocolate chip cookie and strawberry shortcake", voice="en-us", amplitude=0.6)
    short = spoken("got it", voice="en-gb", pitch=30, amplitude=0.6)
    start = int(1.5 * RATE)
    scene = mix_scene([(0, long, start), (1, short, start + int(0.3 * RATE))], 2,
                      noise_snr_db=35.0, seed=4, length=int(6.0 * RATE))
    assert start + int(0.3 * RATE) + len(short) < start + len(long)  # the short one ends first
    wav = tmp_path / "overlap.wav"
    write_wav(wav, scene.audio, RATE)
    loop = loop_for(tmp_path)
    decoded: list[int] = []
    decode = loop.recognizer.decode

    def spy(samples: np.ndarray, grammar: Grammar) -> Hypothesis:
        decoded.append(samples.size)
        return decode(samples, grammar)

    loop.recognizer.decode = spy  # type: ignore[method-assign]
    for frame in WavSource(wav):
        loop.feed(frame)
    loop.finish()
    assert len(decoded) == 2 and decoded[0] > decoded[1]


@pytest.mark.slow
def test_a_call_on_a_phrase_still_being_named_waits_for_it(tmp_path: Path) -> None:
    """Ann and Bob call; Ann serves "brownie and … sorbet" (a valid serve without Rocky's
    favorite) and Bob says "favorite" in her pause: he may only trump a serve that has been
    named, so his call is decoded once her whole phrase is, then he serves the favorite."""
    ann, bob = {"voice": "en-us", "amplitude": 0.6}, {"voice": "en-us+f3", "amplitude": 0.6}
    first = spoken("brownie and", **ann)
    favorite = spoken("favorite", **bob)
    start = int(3.0 * RATE)
    pause_at = start + len(first)
    assert len(favorite) < int(0.8 * RATE)  # Bob is done before Ann goes on
    scene = mix_scene([
        (0, spoken("got it", **ann), int(1.0 * RATE)),
        (1, spoken("got it", **bob), int(1.4 * RATE)),
        (0, first, start), (1, favorite, pause_at + int(0.05 * RATE)),
        (0, spoken("sorbet", **ann), pause_at + int(0.9 * RATE)),
        (1, spoken("rocky road", **bob), pause_at + int(2.0 * RATE)),
    ], 2, noise_snr_db=35.0, seed=6, length=int(8.0 * RATE))
    wav = tmp_path / "trump.wav"
    write_wav(wav, scene.audio, RATE)
    loop = loop_for(tmp_path)
    items = [i for frame in WavSource(wav) for i in loop.feed(frame)] + loop.finish()
    heard = [(i.player, i.text, i.understood) for i in items if type(i).__name__ == "Heard"]
    assert heard == [("Ann", "got it", True), ("Bob", "got it", True),
                     ("Ann", "brownie and sorbet", True), ("Bob", "favorite", True),
                     ("Bob", "rocky road", True)], heard
    assert loop.referee.state.summary()["players"]["Bob"]["guests"] == 1


def test_at_a_calibrated_table_the_rooms_noise_is_not_a_call() -> None:
    """Calibration refuses a player heard less than 10 dB over their mic's noise; an
    utterance that quiet is the room (babble in a lull of the app's narration, say)."""
    calibration = TableSetup(PLAYERS, (MicInput(None, 0), MicInput(None, 1)), (-50.0, -65.0))
    ears = Ears(2, calibration=calibration)

    call = spoken("got it")

    def heard(mic: int, level_db: float) -> Segment:
        return Segment(mic, 16000, 16000 + call.size, 1.0, 1.0 + call.size / RATE, level_db,
                       16000, call, own_s=0.4)

    assert ears.is_other(heard(0, -48.0)) and not ears.is_other(heard(0, -30.0))
    assert not ears.is_other(heard(1, -48.0))  # that mic's room is quieter
    assert not Ears(2).is_other(heard(0, -48.0))  # uncalibrated: no floor to go by


@pytest.mark.slow
def test_at_a_calibrated_table_a_call_10db_over_babble_is_not_the_rooms_noise() -> None:
    """The bench's scene commands-tune-044 (seed 0): "mine veggie spring rolls" 10 dB over the
    next tables' babble and clatter, at the table as `orderup calibrate` sets it up in the
    same noise. The call is heard as calibration hears a name, where loudest, and stands
    clear of the floor: its mean level, pauses and all, is under the bar."""
    from scripts.scenes import SEAT_NAMES, calibration_take, make_scene, scene_set

    spec = next(s for s in scene_set("full", 0) if s.name == "commands-tune-044")
    c = spec.condition
    scene = make_scene(spec.kind, c, spec.seed)
    names = SEAT_NAMES[: c.n_players]
    found = calibrate(calibration_take(c.room, c.voices, names, spec.seed, snr_db=c.snr_db,
                                       noise=c.noise, clip=c.clip), names)
    ears = Ears(c.n_players,
                calibration=found.table_setup([MicInput(None, ch) for ch in range(c.n_players)]))
    audio = scene.audio.astype(np.float32)
    ended = [e.segment for i in range(0, len(audio), 320)
             for e in ears.feed(AudioFrame(audio[i : i + 320], RATE, c.n_players, i, i / RATE))
             if isinstance(e, SpeechEnd)]
    ended += [e.segment for e in ears.flush() if isinstance(e, SpeechEnd)]
    (call,) = scene.truth["utterances"]
    heard = [s for s in ended if s.mic == call["mic"]
             and s.onset_sample < call["end_sample"] and s.end_sample > call["onset_sample"]]
    assert heard and not any(ears.is_other(s) for s in heard)
    body = audio[heard[0].onset_sample : heard[0].end_sample, call["mic"]]
    mean_db = 10 * np.log10(np.mean(body.astype(np.float64) ** 2))
    assert mean_db < found.noise_floor_db[call["mic"]] + CALL_OVER_NOISE_DB


def test_a_knock_on_the_table_is_no_utterance_and_the_call_after_it_keeps_its_onset() -> None:
    """Cutlery knocked on the table before a call sets off an utterance of its own: it holds
    no speech-like sound, so it never reaches the recogniser or the arbiter as a call, and the
    call after it is heard with its own onset."""
    rng = np.random.default_rng(3)
    t = np.arange(RATE // 4) / RATE
    knock = rng.standard_normal(t.size) * np.exp(-t / 0.004)
    for hz in (1900.0, 3300.0, 5100.0):
        knock += 0.4 * np.sin(2 * np.pi * hz * t) * np.exp(-t / 0.05)
    call_at = int(2.0 * RATE)
    scene = mix_scene([(0, 0.3 * knock / np.abs(knock).max(), int(1.2 * RATE)),
                       (0, spoken("got it"), call_at)], 2, noise_snr_db=35.0, seed=4,
                      length=int(3.5 * RATE))
    ears = Ears(2)
    frames = [scene.audio[i : i + 320] for i in range(0, scene.audio.shape[0], 320)]
    ended = [event.segment for i, block in enumerate(frames)
             for event in ears.feed(AudioFrame(block.astype(np.float32), RATE, 2, i * 320,
                                               i * 320 / RATE))
             if isinstance(event, SpeechEnd)]
    ended += [event.segment for event in ears.flush() if isinstance(event, SpeechEnd)]
    knocks = [seg for seg in ended if seg.end_sample < call_at]
    assert knocks and all(Ears.is_knock(seg) and ears.is_other(seg) for seg in knocks)
    calls = [seg for seg in ended if not ears.is_other(seg)]
    assert [seg.mic for seg in calls] == [0], calls
    assert abs(calls[0].onset_sample - call_at) < 0.02 * RATE


def test_a_killed_replay_resumed_on_its_recording_ends_as_the_whole_replay(tmp_path: Path) -> None:
    wav = recording(tmp_path)
    (tmp_path / "whole").mkdir()
    whole = loop_for(tmp_path / "whole")
    for frame in WavSource(wav):
        whole.feed(frame)
    whole.finish()
    killed = tmp_path / "killed"
    killed.mkdir()
    loop = loop_for(killed)
    for frame in WavSource(wav):
        if frame.t_s > 2.6:  # after the race, before the serve
            break
        loop.feed(frame)
    loop.referee.close()  # a killed process's lock on its journal goes with it
    game, state, restored = restore(str(killed / "game.jsonl"))
    resumed_at = state.t
    assert len(restored.heard) == 2 and 1.6 < resumed_at < 2.6
    again = TableLoop(Referee(game, state, Journal.reopen(str(killed / "game.jsonl"))[0]),
                      create_recognizer("sphinx"), PLAYERS, heard=restored.heard,
                      resume="recording")
    heard = [item for frame in WavSource(wav) for item in again.feed(frame)]
    heard += again.finish()
    assert [(h.player, h.text) for h in heard if isinstance(h, Heard)] == [
        ("Ann", "rocky road")]  # only the serve is heard again: the race was refereed before
    assert again.referee.state.summary() == whole.referee.state.summary()
    _, _, final = restore(str(killed / "game.jsonl"))
    assert len(final.heard) == 3


def test_a_resumed_live_game_runs_on_the_journals_clock(tmp_path: Path) -> None:
    loop = loop_for(tmp_path)
    for frame in WavSource(recording(tmp_path)):
        if frame.t_s > 2.6:
            break
        loop.feed(frame)
    game, state, _ = restore(str(tmp_path / "game.jsonl"))
    resumed_at = state.t
    live = TableLoop(Referee(game, state), create_recognizer("sphinx"), PLAYERS, resume="live")
    assert live.game_time(0.0) == resumed_at  # the new audio starts where the game stood
    silence = np.zeros((RATE * 3, 2), np.float32)
    path = tmp_path / "quiet.wav"
    write_wav(path, silence, RATE)
    for frame in WavSource(path):
        live.feed(frame)  # a tick from the live clock restarting at 0 would be refused
    live.finish()
    assert live.referee.state.t >= resumed_at + 2.5


def test_a_sigkilled_replay_goes_on_with_resume_recording(tmp_path: Path) -> None:
    """A replay killed mid-game goes on with `resume --recording`, heard with the recogniser
    the replay was heard with (its journal records it), not the default."""
    wav = recording(tmp_path)
    stack = tmp_path / "stack.txt"
    stack.write_text("guests: Rocky\n")
    game = ["--game", "desserts", "--players", ",".join(PLAYERS), "--stack", str(stack),
            "--seed", "1", "--backend", SYNTHESISED_BACKEND]
    whole = subprocess.run([sys.executable, "-m", "voice.cli", "replay", str(wav), *game,
                            "--json"], capture_output=True, text=True, check=True)
    journal = tmp_path / "game.jsonl"
    live = subprocess.Popen([sys.executable, "-m", "voice.cli", "replay", str(wav), *game,
                             "--realtime", "--journal", str(journal)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    def heard() -> int:
        return journal.read_text("utf-8").count('"heard": {') if journal.exists() else 0

    deadline = time.monotonic() + 60
    while heard() < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    live.kill()
    live.wait()
    _, killed, restored = restore(str(journal))
    assert len(restored.heard) == 2 and not killed.finished  # killed between race and serve
    assert restored.backend == SYNTHESISED_BACKEND != DEFAULT_BACKEND
    done = subprocess.run([sys.executable, "-m", "voice.cli", "resume", str(journal),
                           "--recording", str(wav), "--json"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    resumed = json.loads(done.stdout.splitlines()[0])
    assert (resumed["type"], resumed["backend"]) == ("resumed", SYNTHESISED_BACKEND)
    final = json.loads(done.stdout.splitlines()[-1])
    assert final == json.loads(whole.stdout.splitlines()[-1])
    assert len(restore(str(journal))[2].heard) == 3


@pytest.mark.slow
def test_an_unfinished_phrase_does_not_wait_for_a_copy_heard_on_its_mic(tmp_path: Path) -> None:
    """A live take through the audio server (tests/fixtures/live/take.flac: Maya's, Leo's and
    Priya's mics, then what the app played). Leo's "got it", just after Maya's, is heard as
    nothing and may be the start of a phrase; the next sound on his mic is Maya's voice heard
    there, not its rest. The phrase used to wait for that sound and that sound for the phrase,
    and the table heard nothing more: Maya's serve was lost."""
    import soundfile as sf

    take, rate = sf.read(str(Path(__file__).parent / "fixtures" / "live" / "take.flac"),
                         dtype="float32")
    wav = tmp_path / "take.wav"
    write_wav(wav, take[:, :3], rate)
    write_wav(tmp_path / "take.app.wav", take[:, 3:], rate)
    stack = tmp_path / "stack.txt"
    stack.write_text("guests: Rocky\n")
    code, out, err = in_process(
        "replay", str(wav), "--game", "desserts", "--players", "Maya,Leo,Priya", "--seed", "11",
        "--stack", str(stack), "--journal", str(tmp_path / "game.jsonl"))
    assert code == 0, err
    assert "Maya first." in out and "Maya takes Rocky." in out, out


@pytest.mark.slow
def test_unfinished_phrases_at_the_end_of_a_recording_are_not_lost(tmp_path: Path) -> None:
    """Bob is still talking when the recording ends; Ann's and then Cara's "brownie and",
    begun after him, are decoded only then, after his, and are unfinished: nothing more will
    be heard, so each is released as it is, not left waiting for its rest."""
    from voice.recognition.grammar import game_grammar
    from voice.table.pipeline import Pipeline

    players = ("Ann", "Bob", "Cara")
    talk = spoken("so what did everyone think of the dessert we had last week",
                  voice="en-gb", pitch=30, amplitude=0.6)
    end = int(0.8 * RATE) + talk.size - int(0.3 * RATE)  # cut in Bob's last word
    scene = mix_scene([(1, talk, int(0.8 * RATE)),
                       (0, spoken("brownie and", voice="en-us", amplitude=0.6), int(2.4 * RATE)),
                       (2, spoken("brownie and", voice="en-us+f3", amplitude=0.6),
                        int(2.8 * RATE))],
                      3, noise_snr_db=35.0, seed=5, length=end)
    wav = tmp_path / "cut.wav"
    write_wav(wav, scene.audio, RATE)
    grammar = game_grammar("desserts", players)
    pipeline = Pipeline(players, create_recognizer("sphinx"), lambda mic, onset_s: grammar)
    heard = list(pipeline.run(WavSource(wav)))
    assert [h.mic for h in heard] == [1, 0, 2], heard
    assert [h.onset_s for h in heard[1:]] == pytest.approx([2.4, 2.8], abs=0.03)
