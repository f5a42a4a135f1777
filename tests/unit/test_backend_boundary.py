"""The runtime reaches the chip only through the Backend interface (issue 11's boundary): a
backend that offers nothing but the interface's calls runs every path (native vector and Cube
kernels, the shim, views, graphs); calibration and the speed of light run on a timing-only
device; nixl builds no chip objects of its own."""

import ast
import importlib
import pathlib

import numpy as np
import pytest

import ixl
from ixl.ascend import SimulatedChip, get_chip
from ixl.nixl import backend as backend_module
from ixl.nixl.backend import Backend

device_module = importlib.import_module("ixl.nixl.device")    # (ixl.nixl.device is a function)

SRC = pathlib.Path(ixl.__file__).parent
PROTOCOL = [name for name in vars(Backend) if not name.startswith("_")]
# What nixl may name from the chip's package outside backend.py: types it annotates with or
# lists, never a thing it builds or calls.
TYPES = {"ChipSpec", "CHIPS", "UnknownChipError", "LaunchRecord", "GlobalTensor"}


class InterfaceOnly:
    """A backend that has the interface's calls and attributes and nothing else; it counts
    the calls."""

    def __init__(self, chip: str):
        self._chip = SimulatedChip(get_chip(chip))
        self.chip, self.version = self._chip.chip, self._chip.version
        self.calls = {}

    def __getattr__(self, name):
        if name not in PROTOCOL:
            raise AttributeError(f"the runtime reached past the Backend interface: .{name}")
        method = getattr(self._chip, name)

        def call(*args, **kwargs):
            self.calls[name] = self.calls.get(name, 0) + 1
            return method(*args, **kwargs)
        return call


@pytest.fixture
def dev(monkeypatch):
    monkeypatch.setattr(device_module, "create_backend", InterfaceOnly)
    d = ixl.device("910B1", debug=True)
    yield d
    d.close()


def test_every_path_runs_through_the_interface_alone(dev):
    x = np.arange(64, dtype=np.float16).reshape(8, 8)
    a = dev.tensor(x)
    outs = [dev.run("Add", a, a), dev.run("MatMul", a, a), dev.run("Transpose", a),
            dev.run("TransData", a, dst_format="FRACTAL_NZ"), dev.run("Cast", a, to="float64")]
    np.testing.assert_array_equal(outs[0].numpy(), x + x)
    np.testing.assert_allclose(outs[1].numpy(), (x.astype(np.float32) @ x).astype(np.float16),
                               rtol=1e-3)
    np.testing.assert_array_equal(outs[2].numpy(), x.T)
    np.testing.assert_array_equal(outs[3].numpy(), x)
    np.testing.assert_array_equal(outs[4].numpy(), x.astype(np.float64))     # on the shim
    view = dev.run("Reshape", a, dev.tensor(np.array([64], np.int64)))
    assert view.shape == (64,)
    calls = dev.backend.calls
    assert calls["launch"] == 4 and calls["window"] >= 8 and calls["map"] >= 6
    assert calls["host_copy_us"] >= 2 and calls["write"] >= 2 and calls["read"] >= 4
    for t in (a, view, *outs):
        t.free()


def test_nixl_names_no_chip_object_outside_the_backend_module():
    for path in sorted((SRC / "nixl").glob("*.py")):
        if path.name == "backend.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and "ascend" in node.module:
                names = {a.name for a in node.names}
                assert names <= TYPES, (path.name, names - TYPES)


def test_calibration_and_the_speed_of_light_build_no_chip_of_their_own():
    for rel in ("calibration.py", "profile/roofline.py"):
        tree = ast.parse((SRC / rel).read_text())
        named = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                 for a in n.names}
        assert not named & {"SimulatedChip", "GlobalMemory", "AICore", "Mode"}, rel


def test_the_protocol_is_what_the_simulated_chip_offers():
    chip = SimulatedChip(get_chip("910B1"))
    assert all(callable(getattr(chip, name)) for name in PROTOCOL
               if name not in ("chip", "version"))
    assert isinstance(backend_module.create_backend("910B1"), SimulatedChip)
