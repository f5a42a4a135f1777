"""Version alignment (R6, R14): the runtime, the chip model and the kernel library each carry a
version; an Ascend toolkit and driver are reported when installed on this machine."""

from __future__ import annotations

import glob
import os
import platform
import re
from dataclasses import dataclass
from importlib import metadata

from . import __version__
from .ascend import CHIP_MODEL_VERSION
from .nixl.version import RUNTIME_VERSION, compatible

# Where an installed CANN toolkit and NPU driver keep their version files.
TOOLKIT_FILES = [
    "{home}/version.cfg",
    "{home}/*/ascend_toolkit_install.info",
    "{home}/compiler/version.info",
]
DRIVER_FILES = ["/usr/local/Ascend/driver/version.info"]
TOOLKIT_HOMES = ["/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/latest"]
PACKAGES = ["numpy", "ml_dtypes", "rich", "matplotlib"]


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _read_version(pattern: str) -> str | None:
    for path in sorted(glob.glob(pattern)):
        try:
            text = open(path, encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        m = re.search(r"(?im)^\s*(?:version|Version|toolkit_version|runtime_version)\s*[=:]\s*"
                      r"\[?([^\]\s]+)", text)
        if m:
            return f"{m.group(1)} ({path})"
    return None


def ascend_toolkit() -> str | None:
    homes = [os.environ[v] for v in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME") if v in os.environ]
    for home in homes + TOOLKIT_HOMES:
        for pattern in TOOLKIT_FILES:
            found = _read_version(pattern.format(home=home))
            if found:
                return found
    return None


def ascend_driver() -> str | None:
    for path in DRIVER_FILES:
        found = _read_version(path)
        if found:
            return found
    return None


def kernel_library() -> tuple[str, str]:
    from . import kernels
    return kernels.KERNEL_LIBRARY_VERSION, kernels.BUILT_FOR_RUNTIME


def report() -> dict[str, str]:
    lib, built_for = kernel_library()
    out = {
        "ixl": __version__,
        "runtime (nixl)": RUNTIME_VERSION,
        "chip model (ascend)": CHIP_MODEL_VERSION,
        "kernel library": f"{lib} (built for runtime {built_for})",
        "python": platform.python_version(),
    }
    for pkg in PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    out["Ascend toolkit"] = ascend_toolkit() or "not installed"
    out["Ascend driver"] = ascend_driver() or "not installed"
    return out


def checks() -> list[Check]:
    lib, built_for = kernel_library()
    result = [Check("kernel library vs runtime", compatible(built_for, RUNTIME_VERSION),
                    f"kernels built for runtime {built_for}, runtime is {RUNTIME_VERSION}")]
    for pkg in PACKAGES:
        try:
            result.append(Check(pkg, True, metadata.version(pkg)))
        except metadata.PackageNotFoundError:
            result.append(Check(pkg, False, "not installed"))
    return result
