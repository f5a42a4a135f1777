"""Errors of the runtime: memory, registry and launch."""

from __future__ import annotations


class NixlError(RuntimeError):
    symptom = "kernel start failed"

    def __init__(self, message: str) -> None:
        super().__init__(f"{message} (see: ixl explain '{self.symptom}')")


class OutOfMemory(NixlError):
    symptom = "out of memory"


class KernelStartFailed(NixlError):
    symptom = "kernel start failed"


class DeviceClosed(NixlError):
    symptom = "kernel start failed"


class KernelDeclined(NixlError):
    """Raised by a tiling function for a case its kernel does not take after all (found only
    when tiling, e.g. a broadcast row longer than a tile): the runtime runs the shim instead
    and records this message as the reason."""

    symptom = "far slower than expected"

    def __init__(self, message: str) -> None:
        RuntimeError.__init__(self, message)
