"""The benchmark's figures, tables and plots from its measurements (issue 7).

:func:`build` turns per-scene results (scripts/bench_scene.py), the throughput rows and the
memory peaks into figures — each with orderup's value, its baseline's, the target and
whether it is met — plus breakdowns by SNR, split and noise; :func:`write` renders
README.md and the PNG plots from that report.

One module, over 400 lines: every figure of the benchmark's report with its baseline and
target is defined here once, beside the table and plot that show it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from voice.hearing.onsets import OnsetConfig

Record = dict[str, Any]

FREE_LM = "free language model"
NAIVE = "fixed −40 dBFS threshold"
FIRST_RECOGNISED = "first-recognised-wins"
SNR_LEVELS: tuple[tuple[str, Callable[[Record], bool]], ...] = (
    ("clean", lambda r: r["snr_db"] is None),
    ("20 dB", lambda r: r["snr_db"] == 20.0),
    ("10 dB", lambda r: r["snr_db"] == 10.0),
    ("10 dB, babble", lambda r: r["snr_db"] == 10.0 and r["noise"] in ("babble", "both")),
    ("5 dB", lambda r: r["snr_db"] == 5.0),
)
BREAKDOWN_KEYS = (
    "onset_error_median_ms",
    "onset_error_p95_ms",
    "utterances_missed_pct",
    "first_speaker_30ms_pct",
    "first_speaker_15_30ms_pct",
    "bleed_false_utterances",
    "command_accuracy_clean_pct",
    "command_accuracy_babble10_pct",
    "chatter_accepted_pct",
    "latency_p95_ms",
    "command_accuracy_clean_whisper_pct",
    "command_accuracy_babble10_whisper_pct",
    "chatter_accepted_whisper_pct",
    "latency_p95_whisper_ms",
)
"""Figures shown again per split (tune / holdout) and per noise (clean / noisy)."""
PLOT_DPI = 72


RACE_PLAYERS = 4
"""The latency target's race: this many players calling at once."""


def _crowded(races: Sequence[Record]) -> str:
    """What the races with more utterances than :data:`RACE_PLAYERS` held: how many
    utterances for how many calls (the rest other sounds: bleed, noise, a call split)."""
    if not races:
        return ""
    heard = [r["at_once_ms"]["n"] for r in races]
    calls = [sum(u["role"] == "call" for u in r["utterances"]) for r in races]
    return (f"; {len(races)} races held more than {RACE_PLAYERS}: {min(heard)}–{max(heard)} "
            f"utterances for {min(calls)}–{max(calls)} calls, the rest other sounds reported "
            "as utterances (bleed, noise, a call split in two)")


def _figure(
    key: str,
    label: str,
    unit: str,
    orderup: float | None,
    baseline: float | None,
    baseline_name: str,
    n: int,
    target: tuple[str, float] | None = None,
    note: str = "",
) -> Record:
    """One row of the table; ``met`` is None where there is no target or no value."""
    met = None
    if target is not None and orderup is not None:
        op, bound = target
        met = bool(orderup <= bound if op == "<=" else orderup >= bound)
    return {
        "key": key,
        "figure": label,
        "unit": unit,
        "orderup": orderup,
        "baseline": baseline,
        "baseline_name": baseline_name,
        "target": None if target is None else {"op": target[0], "value": target[1]},
        "met": met,
        "n": n,
        "note": note,
    }


def _pct(hits: int, total: int) -> float | None:
    return None if total == 0 else round(100 * hits / total, 1)


def _quantile(values: Sequence[float], q: float) -> float | None:
    return None if not values else round(float(np.percentile(values, q)), 1)


def _outcome(utterance: Record, backend: str, game: str | None = None) -> str:
    """A call's result on one backend: "correct", "wrong" (another phrase understood) or
    "not understood" (also when no segment was found for it)."""
    results = utterance["results"].get(backend, [])
    hit = next((r for r in results if game is None or r["game"] == game), None)
    if hit is None or not hit["understood"]:
        return "not understood"
    return "correct" if hit["text"] == utterance["text"] else "wrong"


def _calls(records: Sequence[Record], kind: str) -> list[Record]:
    return [u for r in records if r["kind"] == kind for u in r["utterances"] if u["role"] == "call"]


def command_rates(records: Sequence[Record], backend: str) -> tuple[float | None, float | None, int]:
    """Command accuracy and not-understood rate (%) of ``backend`` over the commands scenes."""
    outcomes = [_outcome(u, backend) for u in _calls(records, "commands")]
    return (
        _pct(outcomes.count("correct"), len(outcomes)),
        _pct(outcomes.count("not understood"), len(outcomes)),
        len(outcomes),
    )


def _first_speaker(records: Sequence[Record], lo_ms: float, hi_ms: float) -> dict[str, Any]:
    """Races whose first two callers are lo..hi ms apart: how often each arbitration got the
    first caller(s) right."""
    races = [
        r["first"] for r in records if "first" in r and lo_ms <= r["first"]["gap_ms"] < hi_ms
    ]

    def right(field: str) -> float | None:
        return _pct(sum(f[field] == f["expected"] for f in races), len(races))

    return {
        "n": len(races),
        **{f: right(f) for f in ("onsets", "first_recognised", "text", "first_recognised_text")},
    }


OTHER_BACKENDS = {"vosk": "Vosk", "whisper": "Whisper"}
"""Recognisers decoding orderup's segments beside its PocketSphinx, where their model is
installed (the run records which: ``run["models"]``)."""


def scene_figures(records: Sequence[Record], models: dict[str, str | None]) -> list[Record]:
    """Every figure measured on the scenes (all but throughput and memory); `models` names
    the model of each of :data:`OTHER_BACKENDS` (None: not installed here)."""
    players = [u for r in records for u in r["utterances"]]
    ours = [abs(u["onset_error_ms"]) for u in players if u["onset_error_ms"] is not None]
    naive = [abs(u["naive_onset_error_ms"]) for u in players if u["naive_onset_error_ms"] is not None]
    figures = [
        _figure("onset_error_median_ms", "Onset error vs truth, median", "ms",
                _quantile(ours, 50), _quantile(naive, 50), NAIVE, len(ours), ("<=", 5.0)),
        _figure("onset_error_p95_ms", "Onset error vs truth, p95", "ms",
                _quantile(ours, 95), _quantile(naive, 95), NAIVE, len(ours), ("<=", 15.0)),
        _figure("utterances_missed_pct", "Player utterances with no onset found", "%",
                _pct(len(players) - len(ours), len(players)),
                _pct(len(players) - len(naive), len(players)), NAIVE, len(players)),
    ]
    for key, label, lo, hi, target in (
        ("first_speaker_30ms_pct", "First speaker right, gap ≥ 30 ms", 30.0, np.inf, 99.0),
        ("first_speaker_15_30ms_pct", "First speaker right, gap 15–30 ms", 15.0, 30.0, 95.0),
        ("first_speaker_tie_pct", "First speaker right, gap < 15 ms (ties)", 0.0, 15.0, None),
    ):
        first = _first_speaker(records, lo, hi)
        figures.append(_figure(key, label, "%", first["onsets"], first["first_recognised"],
                               FIRST_RECOGNISED, first["n"],
                               None if target is None else (">=", target)))
    first = _first_speaker(records, 15.0, np.inf)
    figures.append(_figure(
        "first_speaker_text_15ms_pct", "First speaker right, gap ≥ 15 ms, end to end (by "
        "recognised text)", "%", first["text"], first["first_recognised_text"],
        FIRST_RECOGNISED, first["n"]))

    def false(kind: str, detector: str) -> int:
        return sum(r["false"][detector][kind] for r in records)

    over_app = _calls(records, "narration")
    figures.append(_figure(
        "calls_over_app_heard_pct", "Calls over (or just after) the app's voice heard", "%",
        _pct(sum(u["onset_error_ms"] is not None for u in over_app), len(over_app)),
        _pct(sum(u["naive_onset_error_ms"] is not None for u in over_app), len(over_app)),
        NAIVE, len(over_app),
        note=f"understood right: {_pct(sum(_outcome(u, 'sphinx') == 'correct' for u in over_app), len(over_app))} %"))
    figures += [
        _figure("bleed_false_utterances", "Bleed reported as an utterance", "utterances",
                false("bleed", "orderup"), false("bleed", "naive"), NAIVE, len(records),
                ("<=", 0.0), note=f"over {len(players)} player utterances"),
        _figure("app_false_utterances", "App's own voice reported as an utterance", "utterances",
                false("app", "orderup"), false("app", "naive"), NAIVE,
                sum(r["kind"] == "narration" for r in records)),
        _figure("other_false_utterances", "Other false utterances (noise, split utterances)",
                "utterances", false("other", "orderup"), false("other", "naive"), NAIVE,
                len(records)),
    ]
    for key, label, select, target in (
        ("clean", "clean", SNR_LEVELS[0][1], 98.0),
        ("babble10", "babble (± clatter) at 10 dB SNR", SNR_LEVELS[3][1], 95.0),
    ):
        chosen = [r for r in records if select(r)]
        acc, unknown, n = command_rates(chosen, "sphinx")
        free_acc, free_unknown, _ = command_rates(chosen, "free")
        figures += [
            {
                **_figure(f"command_accuracy_{key}_pct", f"Command accuracy, {label}", "%", acc,
                          free_acc, FREE_LM, n, (">=", target)),
                "truth_cut": command_rates(chosen, "truth_cut")[0],
            },
            _figure(f"not_understood_{key}_pct", f"Commands not understood, {label}", "%",
                    unknown, free_unknown, FREE_LM, n),
        ]
        for backend, name in OTHER_BACKENDS.items():
            model = models.get(backend)
            note = f"{name} model {model}" if model else f"no English {name} model here"
            if model and backend == "whisper":
                note += (f"; on each command cut at the truth: "
                         f"{_value(command_rates(chosen, 'whisper_truth_cut')[0], '%')} right")
            figures.append(_figure(
                f"command_accuracy_{key}_{backend}_pct", f"Command accuracy, {label}, {name} "
                "backend", "%", command_rates(chosen, backend)[0] if model else None, free_acc,
                FREE_LM, n, (">=", target), note=note))
    chatter = [u for r in records for u in r["utterances"] if u["role"] == "chatter"]

    def accepted(backend: str) -> float | None:
        return _pct(sum(any(x["understood"] for x in u["results"].get(backend, []))
                        for u in chatter), len(chatter))

    figures.append(_figure(
        "chatter_accepted_pct", "Table chatter accepted as a call", "%", accepted("sphinx"),
        accepted("free"), FREE_LM, len(chatter), ("<=", 2.0),
        note="each chatter line decoded against all three games' grammars; accepted if any"))
    if models.get("whisper"):
        figures.append(_figure(
            "chatter_accepted_whisper_pct", "Table chatter accepted as a call, Whisper backend",
            "%", accepted("whisper"), accepted("free"), FREE_LM, len(chatter), ("<=", 2.0)))
    decode = {b: [ms for r in records for ms in r["decode_ms"].get(b, [])]
              for b in ("sphinx", "free", "whisper")}
    figures += [
        _figure("latency_median_ms", "End of segment (SpeechEnd) → text, median", "ms",
                _quantile(decode["sphinx"], 50), _quantile(decode["free"], 50), FREE_LM,
                len(decode["sphinx"])),
        _figure("latency_p95_ms", "End of segment (SpeechEnd) → text, p95", "ms",
                _quantile(decode["sphinx"], 95), _quantile(decode["free"], 95), FREE_LM,
                len(decode["sphinx"]), ("<=", 150.0)),
    ]
    if models.get("whisper"):
        raced = [r for r in records if "whisper" in r.get("at_once_ms", {})]
        at_once = [r["at_once_ms"] for r in raced]
        four = [a for a in at_once if a["n"] <= RACE_PLAYERS]
        more = [r for r in raced if r["at_once_ms"]["n"] > RACE_PLAYERS]
        sphinx_p95 = _quantile([a["sphinx"] for a in at_once], 95)
        figures += [
            _figure("latency_p95_whisper_ms", "End of segment (SpeechEnd) → text, p95, Whisper "
                    "backend", "ms", _quantile(decode["whisper"], 95),
                    _quantile(decode["free"], 95), FREE_LM, len(decode["whisper"]),
                    ("<=", 500.0), note="commands and chatter scenes"),
            _figure("race_at_once_p95_ms", "A race's utterances decoded at once → last text, "
                    "p95, Whisper backend (one after another, as the pipeline decodes them)",
                    "ms", _quantile([a["whisper"] for a in at_once], 95),
                    sphinx_p95,
                    "PocketSphinx, one after another", len(at_once), ("<=", 500.0),
                    note=f"a median {_quantile([a['n'] for a in at_once], 50)} utterances per "
                         f"race{_crowded(more)}"),
            _figure("race_four_p95_ms", "A race's utterances decoded at once → last text, "
                    f"p95, Whisper backend, races of at most {RACE_PLAYERS} utterances (one "
                    "after another)", "ms", _quantile([a["whisper"] for a in four], 95),
                    _quantile([a["sphinx"] for a in four], 95),
                    "PocketSphinx, one after another", len(four)),
            _figure("race_batch_p95_ms", "A race's utterances decoded at once → last text, "
                    "p95, Whisper backend (one encoder batch)", "ms",
                    _quantile([a["whisper_batch"] for a in at_once], 95),
                    sphinx_p95,
                    "PocketSphinx, one after another", len(at_once)),
        ]
    spoken = [u for u in players if u["role"] == "call" and "end_to_delivery_ms" in u]

    def end_to_text(backend: str) -> list[float]:
        return [u["end_to_delivery_ms"] + u["decode_ms"][backend]
                for u in spoken if backend in u["decode_ms"]]

    delivery = _quantile([u["end_to_delivery_ms"] for u in spoken], 50)
    figures.append(_figure(
        "end_of_speech_to_text_median_ms", "End of speech (truth) → text, median", "ms",
        _quantile(end_to_text("sphinx"), 50), _quantile(end_to_text("free"), 50), FREE_LM,
        len(spoken)))
    figures.append(_figure(
        "end_of_speech_to_text_p95_ms", "End of speech (truth) → text, p95", "ms",
        _quantile(end_to_text("sphinx"), 95), _quantile(end_to_text("free"), 95), FREE_LM,
        len(spoken), ("<=", 150.0),
        note=f"the segment is delivered a median {delivery:g} ms after the last sample of speech: "
             f"the detector's {OnsetConfig().end_silence_ms:g} ms end-of-speech hangover, plus "
             "the room's reverberation heard as speech" if delivery is not None else ""))
    return figures


REAL_BACKENDS = {"sphinx": "PocketSphinx + grammar", "free": FREE_LM, "whisper": "Whisper + grammar"}
"""The recognisers real voices are decoded with (scripts/bench_real.py), as the report names
them."""
REAL_KINDS = (("call", "right", "one-word calls right"),
              ("word", "accepted", "words that are not calls accepted"),
              ("sentence", "accepted", "sentences accepted"))
"""What is counted of each kind of real clip: calls right, the others accepted as a call."""
REAL_CONDITIONS = {"clean": "clean", "room": "in a room", "babble": "in 10 dB babble",
                   "real-babble": "in 10 dB babble of real voices"}
"""The conditions real clips are decoded in (scripts/measure_recognition.py's), in report
order, as the report names them."""


def real_rates(real: Sequence[Record], backend: str, part: str, noise: str) -> dict[str, Any]:
    """Per kind of clip, (% counted, how many decodes) of one backend on one part of the
    speakers in one condition."""
    rows = [r for r in real if (r["backend"], r["part"], r["noise"]) == (backend, part, noise)]
    out = {}
    for kind, field, _ in REAL_KINDS:
        chosen = [r for r in rows if r["kind"] == kind]
        out[kind] = (_pct(sum(r[field] for r in chosen), len(chosen)), len(chosen))
    return out


def real_figures(real: Sequence[Record]) -> list[Record]:
    """The held-out speakers' figures, for each grammar backend beside the free model: calls
    right and words that are not calls accepted, in each condition; sentences accepted."""
    figures = []
    conditions = sorted({r["noise"] for r in real}, key=list(REAL_CONDITIONS).index)
    for backend, suffix in (("sphinx", ""), ("whisper", "_whisper")):
        if not any(r["backend"] == backend for r in real):
            continue
        name = "" if backend == "sphinx" else ", Whisper backend"
        for noise in conditions:
            ours, base = real_rates(real, backend, "heldout", noise), real_rates(
                real, "free", "heldout", noise)
            for kind, _, what in REAL_KINDS:
                target = {"call": (">=", 97.0), "word": ("<=", 3.0), "sentence": ("<=", 2.0)}[kind]
                figures.append(_figure(
                    f"real_{kind}_{noise.replace('-', '_')}{suffix}_pct",
                    f"Real voices, held-out speakers: {what}, {REAL_CONDITIONS[noise]}{name}", "%",
                    ours[kind][0], base[kind][0], FREE_LM, ours[kind][1],
                    target if noise == "clean" else None))
    return figures


def machine_figures(speed: dict[str, Any], memory: dict[str, float]) -> list[Record]:
    """Throughput and memory figures."""
    rows = speed["rows"]
    at8 = max((r for r in rows if r["mics"] <= 8), key=lambda r: r["mics"])

    def most(rtf: dict[int, float]) -> tuple[int, bool]:
        """The most mics in real time, and whether it never fell behind (then it is more)."""
        best = max((mics for mics, f in rtf.items() if f < 1.0), default=0)
        return best, best == rows[-1]["mics"]

    def measured(detector: str) -> dict[int, float]:
        return {r["mics"]: r[detector] for r in rows}

    def decoding(backend: str) -> dict[int, float]:
        return {r["mics"]: r["pipeline"][backend] for r in rows if backend in r["pipeline"]}

    def most_figure(key: str, label: str, ours: dict[int, float], theirs: dict[int, float],
                    baseline: str) -> Record:
        (best, capped), (base, base_capped) = most(ours), most(theirs)
        return {**_figure(key, label, "mics", best, base, baseline, len(ours), (">=", 8.0),
                          note=f"doubling the mics up to {speed['max_mics_tested']}"),
                "at_least": {"orderup": capped, "baseline": base_capped}}

    backends = rows[0]["pipeline"]
    return [
        _figure("rtf_8_mics", f"Real-time factor of onset detection, {at8['mics']} mics, one core",
                "×", at8["orderup"], at8["naive"], NAIVE, at8["mics"]),
        _figure("cpu_per_mic_pct", "CPU per microphone (one core)", "% core",
                round(100 * at8["orderup"] / at8["mics"], 2),
                round(100 * at8["naive"] / at8["mics"], 2), NAIVE, at8["mics"]),
        most_figure("max_realtime_mics", "Most microphones processed in real time, one core",
                    measured("orderup"), measured("naive"), NAIVE),
        *([most_figure("max_realtime_mics_sphinx", "Most microphones in real time, one core, "
                       "every utterance decoded (PocketSphinx)", decoding("sphinx"),
                       measured("orderup"), "onsets alone")] if "sphinx" in backends else []),
        *([most_figure("max_realtime_mics_whisper", "Most microphones in real time, one core, "
                       "every utterance decoded, Whisper backend", decoding("whisper"),
                       decoding("sphinx"), "PocketSphinx decoding")]
          if "whisper" in backends else []),
        _figure("peak_memory_mb", "Peak memory of the pipeline (RSS)", "MB",
                memory["orderup"], memory["baseline"], f"{NAIVE} + {FREE_LM}", 1),
    ]


def snr_table(records: Sequence[Record], models: dict[str, str | None]) -> list[Record]:
    """Command accuracy and not-understood rate by SNR, per backend."""
    rows = []
    for label, select in SNR_LEVELS:
        chosen = [r for r in records if select(r)]
        row: Record = {"snr": label}
        for backend in ("sphinx", "free", *(b for b in OTHER_BACKENDS if models.get(b))):
            acc, unknown, row["n"] = command_rates(chosen, backend)
            row[backend] = {"accuracy_pct": acc, "not_understood_pct": unknown}
        rows.append(row)
    return rows


def build(
    run: Record, records: list[Record], speed: dict[str, Any], memory: dict[str, float],
    real: list[Record], recorded: list[Record],
) -> Record:
    """The whole report: run details, figures, breakdowns, the raw results (the scenes', the
    real voices' decodes and the scenes babbled by recorded people), and the scenes the
    pipeline raised on (left out of the figures)."""
    models = run["models"]
    failed = [r for r in records if "error" in r]
    records = [r for r in records if "error" not in r]

    def breakdown(select: Callable[[Record], bool]) -> dict[str, Any]:
        chosen = [r for r in records if select(r)]
        figs = {f["key"]: f for f in scene_figures(chosen, models)}
        return {"scenes": len(chosen),
                **{k: figs[k]["orderup"] for k in BREAKDOWN_KEYS if k in figs}}

    return {
        "run": run,
        "figures": (scene_figures(records, models) + real_figures(real)
                    + machine_figures(speed, memory)),
        "commands_by_snr": snr_table(records, models),
        "breakdown": {
            "tune": breakdown(lambda r: r["split"] == "tune"),
            "holdout": breakdown(lambda r: r["split"] == "holdout"),
            "clean": breakdown(lambda r: r["snr_db"] is None),
            "noisy": breakdown(lambda r: r["snr_db"] is not None),
        },
        "calibrated": calibrated_table(records),
        "recorded_babble": recorded_babble_table(records, recorded),
        "throughput": speed,
        "memory_mb": memory,
        "failed": failed,
        "scenes": records,
        "real_speech": real,
        "recorded_babble_scenes": recorded,
    }


# --------------------------------------------------------------------------- rendering


def _value(value: float | None, unit: str, note: str = "", at_least: bool = False) -> str:
    if value is None:
        return note or "—"
    text = ("≥ " if at_least else "") + f"{value:g}"
    return text if unit in ("utterances", "mics") else f"{text} {unit}"


def _target(figure: Record) -> str:
    target = figure["target"]
    if target is None:
        return ""
    op = "≤" if target["op"] == "<=" else "≥"
    return f"{op} {_value(target['value'], figure['unit'])}"


def _met(figure: Record) -> str:
    return {True: "yes", False: "**short**", None: "—" if figure["target"] else ""}[figure["met"]]


def table(figures: Sequence[Record]) -> str:
    """The main table as Markdown."""
    lines = ["| figure | orderup | baseline | target | met? | n |", "|---|---|---|---|---|---|"]
    for f in figures:
        at_least = f.get("at_least", {})
        ours = _value(f["orderup"], f["unit"], f["note"], at_least.get("orderup", False))
        base = _value(f["baseline"], f["unit"], at_least=at_least.get("baseline", False))
        base += f" ({f['baseline_name']})"
        lines.append(f"| {f['figure']} | {ours} | {base} | {_target(f)} | {_met(f)} | {f['n']} |")
    return "\n".join(lines)


def _snr_markdown(rows: Sequence[Record], models: dict[str, str | None]) -> str:
    backends = [("sphinx", "PocketSphinx + grammar"), ("free", "PocketSphinx free LM")]
    backends += [(b, f"{name} ({models[b]}) + grammar") for b, name in OTHER_BACKENDS.items()
                 if models.get(b)]
    head = " | ".join(f"{name}: right / not understood" for _, name in backends)
    lines = [f"| SNR | n | {head} |", "|---|---|" + "---|" * len(backends)]
    for row in rows:
        cells = " | ".join(
            f"{_value(row[b]['accuracy_pct'], '%')} / {_value(row[b]['not_understood_pct'], '%')}"
            for b, _ in backends
        )
        lines.append(f"| {row['snr']} | {row['n']} | {cells} |")
    if not models.get("vosk"):
        lines.append("\nVosk: no English Vosk model here (`orderup models fetch vosk-en-small`).")
    return "\n".join(lines)


def _recorded_babble_markdown(report: Record) -> str:
    if not report["recorded_babble_scenes"]:
        return ("Not measured: the quick set, or no recordings here (`../shared/real_speech`, "
                "or `ORDERUP_REAL_SPEECH`).")
    failed = [r["name"] for r in report["recorded_babble_scenes"] if "error" in r]
    return detection_markdown(report["recorded_babble"]) + (
        f"\n\nThe pipeline raised on {', '.join(failed)} (left out)." if failed else "")


def _real_markdown(real: Sequence[Record]) -> str:
    """Per part of the speakers and condition, each backend's calls right / words that are
    not calls accepted / sentences accepted."""
    if not real:
        return ("No real recordings here (`../shared/real_speech`, or `ORDERUP_REAL_SPEECH`): "
                "not measured.")
    backends = [b for b in REAL_BACKENDS if any(r["backend"] == b for r in real)]
    lines = ["| speakers | condition | " + " | ".join(REAL_BACKENDS[b] for b in backends) + " |",
             "|---|---|" + "---|" * len(backends)]
    conditions = sorted({r["noise"] for r in real}, key=list(REAL_CONDITIONS).index)
    for part in ("tune", "heldout"):
        for noise in conditions:
            cells = []
            for b in backends:
                rates = real_rates(real, b, part, noise)
                cells.append(" / ".join(_value(rates[k][0], "%") for k, _, _ in REAL_KINDS))
            lines.append(f"| {'held-out' if part == 'heldout' else part} | {noise} | "
                         + " | ".join(cells) + " |")
    n = real_rates(real, backends[0], "heldout", conditions[0])
    tune = real_rates(real, backends[0], "tune", conditions[0])
    lines.append(f"\nEach cell: {' / '.join(what for _, _, what in REAL_KINDS)}. Decodes per "
                 f"backend and condition (tune, held-out): calls {tune['call'][1]}, "
                 f"{n['call'][1]}; other words {tune['word'][1]}, {n['word'][1]}; sentences "
                 f"{tune['sentence'][1]}, {n['sentence'][1]}.")
    return "\n".join(lines)


def _breakdown_markdown(report: Record) -> str:
    parts = report["breakdown"]
    labels = {f["key"]: (f["figure"], f["unit"]) for f in report["figures"]}
    names = list(parts)
    lines = [
        "| figure | " + " | ".join(f"{n} ({parts[n]['scenes']} scenes)" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for key in (k for k in BREAKDOWN_KEYS if k in labels):
        label, unit = labels[key]
        lines.append(f"| {label} | " + " | ".join(_value(parts[n].get(key), unit) for n in names)
                     + " |")
    return "\n".join(lines)


def detection_row(split: str, how: str, heard: Sequence[Record], of: int) -> Record:
    """Detection figures over scenes heard one way (`heard`: per scene, the player utterances'
    ``onset_error_ms``, the ``false`` utterances by class and, for races, ``first``), `of`
    the split's scenes."""
    errors = [e for h in heard for e in h["onset_error_ms"]]
    return {
        "split": split, "how": how, "scenes": len(heard), "of": of,
        "missed_pct": _pct(sum(e is None for e in errors), len(errors)),
        "first_30ms_pct": _first_speaker(heard, 30.0, np.inf)["onsets"],
        "first_15_30ms_pct": _first_speaker(heard, 15.0, 30.0)["onsets"],
        "bleed": sum(h["false"]["bleed"] for h in heard),
        "other": sum(h["false"]["other"] for h in heard),
    }


def _uncalibrated(record: Record) -> Record:
    """What :func:`detection_row` reads of a scene's record, heard uncalibrated."""
    return {"onset_error_ms": [u["onset_error_ms"] for u in record["utterances"]],
            "false": record["false"]["orderup"],
            **({"first": record["first"]} if "first" in record else {})}


def calibrated_table(records: Sequence[Record]) -> list[Record]:
    """The scenes whose table ``orderup calibrate`` sets up, heard uncalibrated and then
    calibrated (``record["calibrated"]``), per split: detection figures side by side."""
    rows = []
    for split in ("tune", "holdout"):
        chosen = [r for r in records if r["split"] == split and "calibrated" in r]
        of = sum(r["split"] == split for r in records)
        rows.append(detection_row(split, "uncalibrated", [_uncalibrated(r) for r in chosen], of))
        rows.append(detection_row(split, "calibrated", [r["calibrated"] for r in chosen], of))
    return rows


def recorded_babble_table(records: Sequence[Record], recorded: Sequence[Record]) -> list[Record]:
    """The scenes with babble, heard as in the figures (synthesised talkers babbling) beside
    the same scenes babbled by recorded people (`recorded`: per scene,
    :func:`bench_scene.heard_both_ways`), per split: uncalibrated, and calibrated where
    calibration sets the table up both times."""
    theirs = {r["name"]: r for r in recorded if "error" not in r}
    rows = []
    for split in ("tune", "holdout"):
        pairs = [(r, theirs[r["name"]]) for r in records
                 if r["split"] == split and r["name"] in theirs]
        both = [(r, o) for r, o in pairs if "calibrated" in r and "calibrated" in o]
        rows += [
            detection_row(split, "uncalibrated, synthesised babble",
                          [_uncalibrated(r) for r, _ in pairs], len(pairs)),
            detection_row(split, "uncalibrated, recorded babble",
                          [o["uncalibrated"] for _, o in pairs], len(pairs)),
            detection_row(split, "calibrated, synthesised babble",
                          [r["calibrated"] for r, _ in both], len(pairs)),
            detection_row(split, "calibrated, recorded babble",
                          [o["calibrated"] for _, o in both], len(pairs)),
        ]
    return rows


def detection_markdown(rows: Sequence[Record]) -> str:
    """:func:`detection_row` rows as a table."""
    head = ("| speakers | table | scenes | no onset | first speaker right, ≥ 30 ms / 15–30 ms "
            "| bleed reported | other false utterances |")
    lines = [head, "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['split']} | {r['how']} | {r['scenes']} of {r['of']} | "
              f"{_value(r['missed_pct'], '%')} | {_value(r['first_30ms_pct'], '%')} / "
              f"{_value(r['first_15_30ms_pct'], '%')} | {r['bleed']} | {r['other']} |"
              for r in rows]
    return "\n".join(lines)


def _throughput_markdown(speed: Record) -> str:
    backends = list(speed["rows"][0]["pipeline"])
    names = [{"sphinx": "PocketSphinx", **OTHER_BACKENDS}[b] for b in backends]
    lines = ["| mics | onsets: orderup | onsets: naive | "
             + " | ".join(f"the pipeline, {n} decoding" for n in names) + " |",
             "|---" * (3 + len(backends)) + "|"]
    lines += [f"| {r['mics']} | {r['orderup']:g} | {r['naive']:g} | " + " | ".join(
        f"{r['pipeline'][b]:g}" if b in r["pipeline"] else "behind" for b in backends) + " |"
        for r in speed["rows"]]
    return "\n".join(lines)


def _shortfalls(report: Record) -> list[str]:
    """One line per target not met, with the measured context that explains it."""
    clean, noisy = report["breakdown"]["clean"], report["breakdown"]["noisy"]
    figures = {f["key"]: f for f in report["figures"]}
    out = []
    for f in report["figures"]:
        if f["met"] is not False:
            continue
        line = f"- **{f['figure']}**: {_value(f['orderup'], f['unit'])} against {_target(f)}"
        unknown = figures.get(f["key"].replace("command_accuracy", "not_understood"))
        if f["key"].startswith("command_accuracy") and unknown and unknown["orderup"] is not None:
            wrong = round(100 - f["orderup"] - unknown["orderup"], 1)
            line += (f"; not understood {unknown['orderup']:g} %, another phrase taken {wrong:g} %"
                     f"; the recogniser alone, on each command cut from its mic at the truth: "
                     f"{_value(f['truth_cut'], '%')} right")
        if clean.get(f["key"]) is not None and noisy.get(f["key"]) is not None:
            line += (f"; clean scenes {_value(clean[f['key']], f['unit'])}, scenes with noise "
                     f"{_value(noisy[f['key']], f['unit'])}")
        if f["note"]:
            line += f" ({f['note']})"
        out.append(line + ".")
    out += [f"- **The pipeline raised on scene {f['name']}** (left out of the figures): "
            f"`{f['error']}`." for f in report["failed"]]
    return out


def _plot(report: Record, out: Path) -> list[str]:
    """The four plots as small PNGs; returns their file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = report["scenes"]
    names = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.savefig(out / name, dpi=PLOT_DPI, pil_kwargs={"optimize": True})
        plt.close(fig)
        names.append(name)

    races = [r["first"] for r in records if "first" in r]
    gaps = sorted({round(f["gap_ms"]) for f in races})
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    for field, label in (("onsets", "orderup (onsets)"), ("first_recognised", FIRST_RECOGNISED)):
        acc = [100 * np.mean([f[field] == f["expected"] for f in races if round(f["gap_ms"]) == g])
               for g in gaps]
        ax.plot(range(len(gaps)), acc, "o-", label=label)
    ties = sum(g < 15 for g in gaps)
    if ties:
        ax.axvspan(-0.5, ties - 0.5, color="0.9", label="< 15 ms: a tie is right")
    ax.set_xticks(range(len(gaps)), [str(g) for g in gaps], fontsize=8)
    ax.set(xlabel="onset gap between the first two callers (ms)", ylabel="first speaker right (%)",
           ylim=(-5, 105))
    ax.legend(fontsize=8)
    save(fig, "first_speaker_by_gap.png")

    rows = report["commands_by_snr"]
    backends = [b for b in ("sphinx", "free", *OTHER_BACKENDS) if b in rows[0]]
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    width = 0.8 / len(backends)
    for i, b in enumerate(backends):
        ax.bar(np.arange(len(rows)) + i * width, [r[b]["accuracy_pct"] or 0 for r in rows], width,
               label={"sphinx": "grammar (orderup)", "free": FREE_LM, **OTHER_BACKENDS}[b])
    ax.set_xticks(np.arange(len(rows)) + width * (len(backends) - 1) / 2,
                  [f"{r['snr']}\nn={r['n']}" for r in rows], fontsize=8)
    ax.set(ylabel="command accuracy (%)", ylim=(0, 105))
    ax.legend(fontsize=8)
    save(fig, "command_accuracy_by_snr.png")

    def cdf(ax: Any, values: Sequence[float], label: str) -> None:
        x = np.sort(np.maximum(values, 0.01))
        ax.step(x, 100 * np.arange(1, x.size + 1) / max(x.size, 1), where="post", label=label)

    players = [u for r in records for u in r["utterances"]]
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    for field, label in (("onset_error_ms", "orderup"), ("naive_onset_error_ms", NAIVE)):
        cdf(ax, [abs(u[field]) for u in players if u[field] is not None], label)
    for bound in (5, 15):
        ax.axvline(bound, color="0.6", linestyle=":")
    ax.set(xscale="log", xlabel="|onset error| (ms)", ylabel="utterances (%, cumulative)")
    ax.legend(fontsize=8)
    save(fig, "onset_error.png")

    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    for backend, label in (("sphinx", "grammar (orderup)"), ("free", FREE_LM),
                           ("whisper", "Whisper")):
        if any(r["decode_ms"].get(backend) for r in records):
            cdf(ax, [ms for r in records for ms in r["decode_ms"].get(backend, [])], label)
    ax.axvline(150, color="0.6", linestyle=":")
    ax.set(xscale="log", xlabel="SpeechEnd → text (ms)", ylabel="segments (%, cumulative)")
    ax.legend(fontsize=8)
    save(fig, "latency.png")
    return names


def write(report: Record, out: Path) -> None:
    """README.md and the plots into ``out``."""
    run = report["run"]
    m = run["machine"]
    plots = _plot(report, out)
    short = _shortfalls(report)
    load = run["load_average"]
    busy = (
        " (other processes shared the cores: the timings are pessimistic)"
        if max(load) > m["cores"] else ""
    )
    text = f"""# orderup benchmark

Generated by `{run['command']}`; do not edit by hand, run it again.

- Date: {run['date']}.
- Machine: {m['cores']} cores ({m['cpu']}), Python {m['python']}, {m['system']}; load average
  {load[0]:g} at the start, {load[1]:g} at the end{busy}.
- Scenes: the `{run['set']}` set of scripts/scenes/ (seed {run['seed']}), {run['scenes']}
  scenes, {run['audio_s']:g} s of audio, each with over a second of room sound before the
  first call (as a running session has).
- Tie window {run['tie_window_ms']:g} ms. Run time {run['runtime_s']:g} s; the benchmark's
  peak memory {run['bench_peak_rss_mb']:g} MB.

## Figures

Every figure beside a baseline measured in the same run; n is how many utterances, scenes,
races or segments it rests on. A recognition figure that names no backend is PocketSphinx's,
which hears the scenes' synthesised voices best; Whisper, the app's default, which hears
real people best (see "Real voices"), is named.

{table(report['figures'])}

## Short of target

{chr(10).join(short) if short else "Every target is met."}

## Commands by SNR and backend

{_snr_markdown(report['commands_by_snr'], run['models'])}

## Real voices

Recordings of real people (scripts/bench_real.py): one-word calls, other words and
sentences, from speakers split once into a tune part and a held-out part that settings are
never chosen on.

{_real_markdown(report['real_speech'])}

## Tune vs holdout, clean vs noisy

The holdout split's voices, speeds, pitches and rooms are disjoint from the tune split's:
settings are to be chosen on tune only, and holdout shows whether they carry over.

{_breakdown_markdown(report)}

## A calibrated table

The README's steps have players run `orderup calibrate` before a game. Each scene comes
with what calibration records at its table (the room, then each player saying their name,
in the scene's noise); where calibration sets the table up (it refuses a player heard less
than 10 dB over the room, two players loudest on one mic), the scene is heard again with
that set-up (PocketSphinx), beside the same scenes uncalibrated from the figures above.

{detection_markdown(report['calibrated'])}

## Babble of recorded people

The scenes with babble again, the same tables, players, calls and SNRs, babbled by people's
recorded sentences (`../shared/real_speech`: the tune part's speakers at tune tables, the
held-out part's at held-out ones; scripts/scenes/sets.py, `real-babble`) instead of
synthesised talkers, each heard by the onset detector alone, beside the same scenes as the
figures above heard them.

{_recorded_babble_markdown(report)}

## Throughput (one core)

Real-time factors: the onset detector alone and the naive one, and the table's pipeline
(onsets, arbitration, every utterance decoded against a game's whole grammar, the
recogniser on one thread); "behind" where that pipeline already fell behind with fewer mics.

{_throughput_markdown(report['throughput'])}

## Plots

{chr(10).join(f"![{name}]({name})" for name in plots)}

## How it is measured

The scenes, the tune/holdout splits, how each figure is measured and its baseline:
`docs/bench.md`. In this run, races are judged at a tie window of {run['tie_window_ms']:g} ms
and throughput over scenes looped to {report['throughput']['duration_s']:g} s.
"""
    (out / "README.md").write_text(text, encoding="utf-8")
