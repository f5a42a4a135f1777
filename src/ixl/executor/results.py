"""The results file: JSON lines, written as tasks finish, so a sweep that stops (Ctrl-C, a
killed process, a crash) resumes where it stopped.

The first line is the header: which sweep (kind, parameters, a digest of its task ids). Each
further line is one task's outcome, written whole with one write() on an append-only file and
flushed, so a killed process leaves every finished task in the file (at most a torn last line,
dropped on resume). The file is also fsync'ed at most every FSYNC_SECONDS and when the sweep
ends, which bounds what an operating-system crash could lose. A lock keeps two sweeps from
writing one file.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from ..hixl import BadInput
from .task import Outcome

FORMAT = 1
FSYNC_SECONDS = 0.5         # [U] fsync costs milliseconds here; per record it would dominate


class ResultsFile:
    """An open results file; `recorded` holds the outcomes already in it (on resume)."""

    def __init__(self, path: str, header: dict, resume: bool) -> None:
        self.path = path
        self.header = json.loads(json.dumps({"ixl_sweep": FORMAT, **header}))  # as read back
        self.recorded: dict[str, Outcome] = {}
        p = Path(path)
        exists = p.exists() and p.stat().st_size > 0
        if exists and not resume:
            raise BadInput(f"--results {path} already holds a sweep's results: add --resume to "
                           f"continue it, or give another file")
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise BadInput(f"--results {path}: another sweep is writing this file") from None
        try:
            if exists:
                self._read()
            else:
                self._write_line(self.header)
                os.fsync(self.fd)
        except BaseException:
            os.close(self.fd)
            raise
        self.synced = time.monotonic()

    def _read(self) -> None:
        data = Path(self.path).read_bytes()
        lines = data.split(b"\n")
        if not data.endswith(b"\n"):           # a record cut short when the writer died
            torn = lines.pop()
            os.ftruncate(self.fd, len(data) - len(torn))
        lines = [line for line in lines if line]
        try:
            header = json.loads(lines[0]) if lines else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            header = None
        if not isinstance(header, dict) or header.get("ixl_sweep") != FORMAT:
            raise BadInput(f"--results {self.path} is not an ixl results file (its first line "
                           f"is not a sweep header); give another file")
        if header != self.header:
            raise BadInput(f"--resume: {self.path} holds another sweep ({describe(header)}), "
                           f"not this one ({describe(self.header)}); give another --results "
                           f"file")
        for number, line in enumerate(lines[1:], 2):
            try:
                outcome = Outcome.from_json(json.loads(line))
            except (json.JSONDecodeError, UnicodeDecodeError, ValueError, TypeError):
                raise BadInput(f"--results {self.path}: line {number} is not a task outcome "
                               f"(was the file edited?); give another file") from None
            self.recorded[outcome.id] = outcome

    def _write_line(self, obj: dict) -> None:
        os.write(self.fd, (json.dumps(obj, separators=(",", ":")) + "\n").encode())

    def append(self, outcome: Outcome) -> None:
        self._write_line(outcome.to_json())
        if time.monotonic() - self.synced >= FSYNC_SECONDS:
            os.fsync(self.fd)
            self.synced = time.monotonic()

    def close(self) -> None:
        if self.fd >= 0:
            os.fsync(self.fd)
            os.close(self.fd)            # releases the lock
            self.fd = -1


def describe(header: dict) -> str:
    params = ", ".join(f"{k} {v}" for k, v in header.get("params", {}).items())
    return f"{header.get('kind')}: {params}; {header.get('tasks')} tasks"
