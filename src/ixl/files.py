"""Files the command line reads and writes: every output path is checked before a run starts
(so a bad path fails at once, not after the work, and nothing is half-written), and every .npy
input is checked as it is read."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import numpy as np

from .hixl import BadInput

NPY_MAGIC = b"\x93NUMPY"


def _writable_dir(flag: str, path: str, folder: Path) -> None:
    if not folder.exists():
        raise BadInput(f"{flag} {path}: directory {folder} does not exist")
    if not folder.is_dir():
        raise BadInput(f"{flag} {path}: {folder} is a file, not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BadInput(f"{flag} {path}: directory {folder} is not writable")


def _nearest_existing(path: Path) -> Path:
    return next(p for p in (path, *path.parents) if p.exists())


def check_output_file(flag: str, path: str | os.PathLike, make_parents: bool = False) -> None:
    """`path` can be written as a file: not a directory, in a writable directory (which, with
    `make_parents`, may be created first)."""
    p = Path(path).absolute()
    if p.is_dir():
        raise BadInput(f"{flag} {path}: is a directory; give a file path")
    if p.exists() and not os.access(p, os.W_OK):
        raise BadInput(f"{flag} {path}: the file exists and is not writable")
    _writable_dir(flag, str(path), _nearest_existing(p.parent) if make_parents else p.parent)


def check_output_dir(flag: str, path: str | os.PathLike) -> None:
    """`path` is a writable directory, or one that can be created."""
    p = Path(path).absolute()
    if p.exists() and not p.is_dir():
        raise BadInput(f"{flag} {path}: is a file; give a directory")
    _writable_dir(flag, str(path), _nearest_existing(p))


def npy_path(path: str) -> str:
    """The path numpy.save writes for `path`: '.npy' appended unless the name ends so."""
    return path if path.endswith(".npy") else path + ".npy"


def plot_path(path: str) -> str:
    """The path a figure is saved to: '.png' appended when the name has no suffix (as
    matplotlib does), and a suffix matplotlib cannot write refused."""
    suffix = Path(path).suffix.lstrip(".").lower()
    if not suffix:
        return path + ".png"
    from matplotlib.backend_bases import FigureCanvasBase
    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix not in formats:
        raise BadInput(f"--plot {path}: matplotlib cannot write .{suffix} files (allowed: "
                       f"{', '.join(sorted(formats))})")
    return path


def save_npy(path: str, array: np.ndarray) -> str:
    """Write `array` to the path numpy.save would use, whole or not at all (through a
    temporary file beside it); returns that path."""
    path = npy_path(path)
    with written_whole(path) as f:
        np.save(f, array, allow_pickle=False)
    return path


def save_text(path: str, text: str) -> str:
    """Write `text` (UTF-8) to `path`, whole or not at all; returns the path."""
    with written_whole(path) as f:
        f.write(text.encode("utf-8"))
    return path


@contextmanager
def written_whole(path: str) -> Iterator[BinaryIO]:
    """A binary file that appears at `path` only once it is complete: written beside it under
    a temporary name and renamed into place (a failure leaves nothing behind)."""
    tmp = Path(path).with_name(f".{Path(path).name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            yield f
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def load_npy(path: str, what: str) -> np.ndarray:
    """A .npy file as an array, or an error naming `what` and what is wrong with the file."""
    p = Path(path)
    if not p.is_file():
        raise BadInput(f"{what}: no such file {path}")
    try:
        with open(p, "rb") as f:
            magic = f.read(len(NPY_MAGIC))
    except OSError as e:
        raise BadInput(f"{what}: cannot read {path} ({e.strerror})") from None
    if magic != NPY_MAGIC:
        raise BadInput(f"{what}: {path} is not a .npy file (numpy.save writes one)")
    try:
        return np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise BadInput(f"{what}: {path} is not a readable .npy file ({e})") from None
