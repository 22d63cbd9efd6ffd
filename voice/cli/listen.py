"""``orderup listen FILE.wav``: the voice pipeline alone, from a (multichannel) recording.

WAV frames → per-mic onsets (bleed rejected) → recogniser on each utterance against the
grammar of a game or a phrase file → arbitration on onsets. One event per utterance, then
who said each understood phrase first.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "listen", help="recognise the calls in a WAV recording (one channel per player)"
    )
    parser.add_argument("wav", metavar="FILE.wav", help="recording; channel i is player i")
    parser.add_argument("--players", default="", help="comma-separated names, channel order")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--game", default="desserts", help="desserts, poutine or chaosteria")
    source.add_argument("--phrases", metavar="FILE", help="phrase file instead of a game")
    parser.add_argument("--backend", default="sphinx", help="recogniser: sphinx (default), vosk or whisper")
    parser.add_argument("--model", help="Vosk model name or directory (vosk backend)")
    parser.add_argument("--tie-window-ms", type=float, default=40.0, help="tie window")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from voice.audio.files import WavSource, read_wav
    from voice.audio.frames import AudioFileError, AudioStreamError
    from voice.cli.replay import app_audio_path
    from voice.hearing.onsets import SpeechEnd, SpeechStart
    from voice.recognition.grammar import GrammarError, game_grammar, load_phrases
    from voice.recognition.interface import Hypothesis, RecognizerError, create_recognizer
    from voice.recognition.models import ModelNotFound
    from voice.table.arbiter import Arbiter, ArbiterError, rank
    from voice.table.loop import Ears, recorded_reference, with_reference

    players = [p.strip() for p in args.players.split(",") if p.strip()]
    try:
        source = WavSource(args.wav)
        grammar = (
            load_phrases(args.phrases, players) if args.phrases
            else game_grammar(_game(args.game), players or _mic_names(source.channels))
        )
        options = {"model": args.model} if args.model else {}
        recognizer = create_recognizer(args.backend, **options)
        recognizer.prepare(grammar)
        arbiter = Arbiter(args.tie_window_ms)
        app = app_audio_path(args.wav, None)
        ears = Ears(source.channels, app is not None)
        frames = with_reference(source, recorded_reference(read_wav(app)[:, 0])) if app else source
        heard: list[Any] = []

        def handle(events: list[Any]) -> None:
            for event in events:
                if isinstance(event, SpeechStart):
                    arbiter.started(event.mic, event.onset_s)
                elif isinstance(event, SpeechEnd):
                    seg = event.segment
                    other = ears.is_other(seg)
                    hyp = None if other else recognizer.decode(seg.samples, grammar)
                    arbiter.recognised(seg.mic, seg.onset_s, None if other else (seg, hyp))
            arbiter.settle(ears.settled_s)
            for utterance in arbiter.ready():
                if utterance.result is not None:
                    heard.append(utterance)
                    _print_utterance(args.json, utterance.result, players)

        for frame in frames:
            handle(ears.feed(frame))
        handle(ears.flush())
        arbiter.close()
        handle([])
    except (AudioFileError, AudioStreamError, GrammarError, ModelNotFound, RecognizerError,
            ArbiterError) as exc:
        print(f"orderup listen: {exc}", file=sys.stderr)
        return 2

    def phrase(result: object) -> str | None:
        hyp: Hypothesis = result[1]  # type: ignore[index]
        return hyp.text if hyp.understood else None

    for verdict in rank(heard, args.tie_window_ms, phrase).values():
        order = [_name(m, players) for m in verdict.order]
        ties = [[_name(m, players) for m in group] for group in verdict.ties]
        if args.json:
            print(json.dumps({"type": "arbitration", "phrase": verdict.phrase, "order": order,
                              "ties": ties}))
        else:
            tie_text = "; ties: " + ", ".join(" = ".join(t) for t in ties) if ties else ""
            print(f"{verdict.phrase!r}: {' then '.join(order)}{tie_text}")
    return 0


def _game(name: str) -> str:
    from voice.recognition.grammar import GrammarError
    from voice.table.games import UnknownGame, lookup

    try:
        return lookup(name).name
    except UnknownGame as exc:
        raise GrammarError(str(exc)) from None


def _mic_names(channels: int) -> list[str]:
    """Stand-in player names for a game grammar when no names are given."""
    return [f"player {chr(ord('a') + i)}" for i in range(channels)]


def _name(mic: int, players: list[str]) -> str:
    return players[mic] if mic < len(players) else f"mic {mic}"


def _print_utterance(as_json: bool, result: Any, players: list[str]) -> None:
    seg, hyp = result
    record = {
        "type": "utterance", "mic": seg.mic, "player": _name(seg.mic, players),
        "onset_s": round(seg.onset_s, 4), "end_s": round(seg.end_s, 4), "text": hyp.text,
        "understood": hyp.understood, "confidence": round(hyp.confidence, 3),
    }
    if as_json:
        print(json.dumps(record), flush=True)
    else:
        mark = "" if hyp.understood else "  (not understood)"
        print(f"{seg.onset_s:8.3f}-{seg.end_s:8.3f} s  {record['player']}: {hyp.text!r}"
              f" [{hyp.confidence:.2f}]{mark}", flush=True)
