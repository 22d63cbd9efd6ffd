"""Pronunciations for words the model dictionary lacks ("Priya", "bruschetta", "matcha"), and
the accents it does not spell.

espeak-ng spells a word in IPA (``espeak-ng -q --ipa``); the IPA is mapped onto the CMU
ARPAbet phone set of the PocketSphinx en-us model. One espeak-ng call serves a whole batch.
The CMU dictionary spells General American; :func:`accent_variants` adds how most of the
rest of the English-speaking world says the same word.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence

from voice.recognition.grammar import UnknownWord

# Longest symbols first; stress marks, length marks and diacritics are dropped before.
_IPA_TO_ARPABET: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    sorted(
        {
            "aʊ": ("AW",), "aɪ": ("AY",), "eɪ": ("EY",), "oʊ": ("OW",), "əʊ": ("OW",),
            "ɔɪ": ("OY",), "ɪə": ("IH", "R"), "eə": ("EH", "R"), "ʊə": ("UH", "R"),
            "tʃ": ("CH",), "dʒ": ("JH",), "ɑ": ("AA",), "ɒ": ("AA",), "æ": ("AE",), "a": ("AE",),
            "ʌ": ("AH",), "ə": ("AH",), "ɐ": ("AH",), "ɚ": ("ER",), "ɜ": ("ER",), "ɔ": ("AO",),
            "ɛ": ("EH",), "e": ("EH",), "ɪ": ("IH",), "ᵻ": ("IH",), "i": ("IY",), "ʊ": ("UH",),
            "u": ("UW",), "o": ("OW",), "b": ("B",), "d": ("D",), "f": ("F",), "ɡ": ("G",),
            "g": ("G",), "h": ("HH",), "k": ("K",), "l": ("L",), "ɫ": ("L",), "m": ("M",),
            "n": ("N",), "p": ("P",), "s": ("S",), "t": ("T",), "v": ("V",), "w": ("W",),
            "z": ("Z",), "ŋ": ("NG",), "ɹ": ("R",), "r": ("R",), "ʃ": ("SH",), "ʒ": ("ZH",),
            "θ": ("TH",), "ð": ("DH",), "j": ("Y",), "ɾ": ("T",), "x": ("K",), "ç": ("HH",),
            "ɬ": ("L",), "ʔ": (),
        }.items(),
        key=lambda kv: -len(kv[0]),
    )
)
_DROP = set("ˈˌːˑ‿-_ \u0329\u032f\u0303\u02de")


def ipa_to_arpabet(ipa: str, word: str = "?") -> tuple[str, ...]:
    """ARPAbet phones for an IPA string; an unmapped symbol is an UnknownWord for `word`."""
    text = "".join(c for c in ipa if c not in _DROP)
    phones: list[str] = []
    i = 0
    while i < len(text):
        for symbol, arpa in _IPA_TO_ARPABET:
            if text.startswith(symbol, i):
                phones.extend(arpa)
                i += len(symbol)
                break
        else:
            raise UnknownWord(word, "espeak-ng", f"IPA symbol {text[i]!r} has no ARPAbet phone")
    if not phones:
        raise UnknownWord(word, "espeak-ng", f"no phones in IPA {ipa!r}")
    return tuple(phones)


def espeak_ipa(words: Sequence[str], voice: str = "en-us") -> list[str]:
    """espeak-ng's IPA for each word (one process for the batch)."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise UnknownWord(words[0] if words else "?", "espeak-ng", "espeak-ng is not installed")
    out = subprocess.run(
        [exe, "-q", "--ipa", "-v", voice],
        input="\n".join(words) + "\n",
        capture_output=True, text=True, check=True, timeout=30,
    ).stdout.splitlines()
    lines = [line.strip() for line in out if line.strip()]
    if len(lines) != len(words):
        raise UnknownWord(", ".join(words), "espeak-ng", f"gave {len(lines)} lines for {len(words)} words")
    return lines


def pronounce(words: Sequence[str], voice: str = "en-us") -> dict[str, tuple[str, ...]]:
    """ARPAbet pronunciations generated for `words`."""
    if not words:
        return {}
    return {w: ipa_to_arpabet(ipa, w) for w, ipa in zip(words, espeak_ipa(words, voice))}


_VOWELS = frozenset(
    ("AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER", "EY", "IH", "IY", "OW", "OY", "UH", "UW")
)
_BROAD_BEFORE = frozenset(("S", "F", "TH"))


def accent_variants(phones: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """How most of the English-speaking world outside North America says a word the CMU
    dictionary spells in General American (England, Wales, Australia, New Zealand, South
    Africa, much of the Caribbean): the broad BATH vowel ("pass" P AA S, "banana"
    B AH N AA N AH), and ER with no vowel after it said without its R ("butter" B AH T AH).

    An R after other vowels is kept ("torte", "bar"): the short words left without it
    matched inside other words, and an American voice lost 3 of 14 dessert names to them."""
    out: list[str] = []
    for i, p in enumerate(phones):
        nxt = phones[i + 1] if i + 1 < len(phones) else None
        if p == "ER" and nxt not in _VOWELS:
            out.append("AH")
        elif p == "AE" and (nxt in _BROAD_BEFORE or nxt == "N" and _VOWELS.intersection(phones[i + 2 : i + 3])):
            out.append("AA")
        else:
            out.append(p)
    variant = tuple(out)
    return () if variant == tuple(phones) else (variant,)
