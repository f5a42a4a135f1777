"""Device tensors: a TensorDesc plus a block of device memory, on the device that made it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .errors import DeviceClosed, KernelStartFailed
from .tensor_desc import TensorDesc

if TYPE_CHECKING:
    from .device import Device


class DeviceTensor:
    """`addr` is where the tensor's bytes start; `block` the allocation holding them (the
    same address, except for a view into part of another tensor's memory)."""

    def __init__(self, device: Device, desc: TensorDesc, addr: int, name: str,
                 block: int | None = None) -> None:
        self.device = device
        self.desc = desc
        self.addr = addr
        self.block = addr if block is None else block
        self.name = name
        self.alive = True

    @property
    def shape(self) -> tuple[int, ...]:
        return self.desc.shape

    @property
    def dtype(self) -> str:
        return self.desc.dtype

    def storage(self) -> np.ndarray:
        """The stored elements (padded layout included), as a read-only copy."""
        self._check_alive()
        raw = self.device.read(self.addr, self.desc.nbytes)
        return raw.view(self.desc.np_dtype).reshape(self.desc.storage_shape)

    def numpy(self) -> np.ndarray:
        """Copy to the host: the logical tensor (padding dropped, fractals unpacked)."""
        return self.desc.from_storage(self.storage())

    def free(self) -> None:
        self.device.release(self)

    def _check_alive(self) -> None:
        if self.device.closed:
            raise DeviceClosed(f"tensor {self.name!r} is on device {self.device.label}, "
                               f"which is closed")
        if not self.alive:
            raise KernelStartFailed(f"tensor {self.name} at {self.addr:#x} was freed")

    def __del__(self):
        if getattr(self, "alive", False) and not self.device.closed:
            self.free()

    def __repr__(self) -> str:
        return f"DeviceTensor({self.name}: {self.desc} @ {self.addr:#x})"
