"""NIXL: how an op runs: descs, device memory, registry, launch, shim."""

from .context import KernelContext
from .device import Device, device
from .errors import DeviceClosed, KernelDeclined, KernelStartFailed, NixlError, OutOfMemory
from .graph import Graph, GraphRecord, Node
from .record import RunRecord
from .registry import REGISTRY, KernelEntry, LaunchPlan, register_kernel
from .tensor import DeviceTensor
from .tensor_desc import Format, TensorDesc
from .version import RUNTIME_VERSION

__all__ = [
    "KernelContext", "Device", "device", "DeviceClosed", "KernelDeclined", "KernelStartFailed",
    "NixlError",
    "OutOfMemory", "RunRecord", "REGISTRY", "KernelEntry", "LaunchPlan", "register_kernel",
    "DeviceTensor", "Format", "TensorDesc", "RUNTIME_VERSION", "Graph", "GraphRecord", "Node",
]
