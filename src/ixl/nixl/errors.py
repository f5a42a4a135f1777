"""Errors of the runtime: memory, registry and launch."""

from __future__ import annotations


class NixlError(RuntimeError):
    symptom = "kernel start failed"

    def __init__(self, message: str):
        super().__init__(f"{message} (see: ixl explain '{self.symptom}')")


class OutOfMemory(NixlError):
    symptom = "out of memory"


class KernelStartFailed(NixlError):
    symptom = "kernel start failed"


class DeviceClosed(NixlError):
    symptom = "kernel start failed"
