"""``orderup listen FILE.wav``: the voice pipeline alone, from a (multichannel) recording.

WAV frames → per-mic onsets (bleed rejected) → recogniser on each utterance against the
grammar of a game or a phrase file → arbitration on onsets. One event per utterance, then
who said each understood phrase first.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from engine.core import ConfigError
from voice.cli.options import (
    add_backend_argument,
    add_join_gap_argument,
    add_tie_window_argument,
    argument,
    table_options,
)
from voice.cli.output import fail
from voice.table.transcript import split_names

if TYPE_CHECKING:
    from voice.table.pipeline import Heard


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "listen", help="recognise the calls in a WAV recording (one channel per player)"
    )
    parser.add_argument("wav", metavar="FILE.wav", help="recording; channel i is player i")
    parser.add_argument("--players", type=argument(split_names), default=(), metavar="A,B,C",
                        help="comma-separated names, channel order")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--game", default="desserts", help="desserts, poutine or chaosteria")
    source.add_argument("--phrases", metavar="FILE", help="phrase file instead of a game")
    add_backend_argument(parser)
    parser.add_argument("--model", help="Vosk model name or directory (vosk backend)")
    add_tie_window_argument(parser)
    add_join_gap_argument(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from voice.audio.files import WavSource
    from voice.audio.frames import AudioFileError, AudioStreamError
    from voice.cli.replay import app_audio_path
    from voice.recognition.grammar import GrammarError, game_grammar, load_phrases
    from voice.recognition.interface import RecognizerError, create_recognizer
    from voice.recognition.models import ModelNotFound
    from voice.table.arbiter import ArbiterError, Utterance, rank
    from voice.table.pipeline import Pipeline, recorded_frames

    players = list(args.players)
    table = table_options(args)
    heard: list[Heard] = []
    try:
        source = WavSource(args.wav)
        if len(players) > source.channels:
            raise ConfigError(f"{args.wav} has {source.channels} channels for "
                              f"{len(players)} players")
        names = players + [f"mic {m}" for m in range(len(players), source.channels)]
        grammar = (
            load_phrases(args.phrases, players) if args.phrases
            else game_grammar(_game(args.game), players or _mic_names(source.channels))
        )
        options = {"model": args.model} if args.model else {}
        recognizer = create_recognizer(args.backend, **options)
        recognizer.prepare(grammar)
        app = app_audio_path(args.wav, None)
        pipeline = Pipeline(names[: source.channels], recognizer, lambda mic, onset_s: grammar,
                            app_channel=app is not None, tie_window_ms=table.tie_window_ms,
                            join_gap_s=table.join_gap_s)
        for utterance in pipeline.run(recorded_frames(source, app)):
            heard.append(utterance)
            _print_utterance(args.json, utterance)
    except (AudioFileError, AudioStreamError, ConfigError, GrammarError, ModelNotFound,
            RecognizerError, ArbiterError) as exc:
        return fail(args.command, str(exc))

    def phrase(h: Heard) -> str | None:
        return h.text if h.understood else None

    calls = [Utterance(h.mic, h.onset_s, h) for h in heard]
    for verdict in rank(calls, table.tie_window_ms, phrase).values():
        order = [names[m] for m in verdict.order]
        ties = [[names[m] for m in group] for group in verdict.ties]
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


def _print_utterance(as_json: bool, heard: Heard) -> None:
    record = {**heard.to_json(), "type": "utterance"}
    if as_json:
        print(json.dumps(record), flush=True)
    else:
        mark = "" if heard.understood else "  (not understood)"
        print(f"{heard.onset_s:8.3f}-{heard.end_s:8.3f} s  {heard.player}: {heard.text!r}"
              f" [{heard.confidence:.2f}]{mark}", flush=True)
