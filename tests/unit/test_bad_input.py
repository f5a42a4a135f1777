"""The bad-input matrix: every bad Python call raises one ixl error that names the culprit;
every bad command line ends in one line on stderr and exit 2. None leaves a traceback, a
written file or a device allocation behind."""

import gc
import json
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ixl
from ixl.ascend import ChipError, UnknownChipError
from ixl.cli import main
from ixl.hixl import AttrError, BadInput, DtypeError, HixlError, ShapeMismatch, UnknownOp, get_op
from ixl.hixl.dtypes import to_numpy
from ixl.nixl import (
    DeviceClosed,
    Graph,
    KernelDeclined,
    KernelEntry,
    KernelStartFailed,
    NixlError,
    OutOfMemory,
    allocator,
)
from ixl.nixl.device import Device
from ixl.nixl.registry import Registry
from tests.helpers import CLI_ENTRY

IXL_ERRORS = (HixlError, NixlError, ChipError, UnknownChipError)


# ---------------------------------------------------------------- the Python API

class Env:
    """Two devices and the tensors a case made on them (freed at the end, so that what is
    live after a refused call can be told apart from what the case itself holds)."""

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch
        self.dev = ixl.device("910B1", debug=True)
        self.other = ixl.device("910B1")
        self.made = []

    def t(self, shape=(4, 8), dtype="float16", dev=None, value=1):
        t = (dev or self.dev).tensor(np.full(shape, value, to_numpy(dtype)))
        self.made.append(t)
        return t

    def freed(self, **kwargs):
        t = self.t(**kwargs)
        t.free()
        return t

    def live_expected(self, dev) -> int:
        blocks = {t.addr: t.desc.nbytes for t in self.made if t.alive and t.device is dev}
        return sum(dev.allocator.round(n) for n in blocks.values())

    def graph(self):
        g = Graph(inputs=["x"])
        g.outputs = [g.add("Relu", "x")]
        return g


def _extra_graph_input(e):
    g = Graph(inputs=["x"])
    g.outputs = [g.add("Add", "x", "x", "x")]
    return e.dev.run_graph(g, {"x": np.ones(4, np.float16)})


def _host_too_small(e):
    e.monkeypatch.setattr(allocator, "host_available_bytes", lambda: 1 << 20)
    return e.dev.empty((4 << 20,), "uint8")


def _closed(e):
    t = e.t()
    e.dev.close()
    return t


API_CASES = [
    # 1. extra inputs never take an output's place
    ("Add, 3 inputs", lambda e: e.dev.run("Add", e.t(), e.t(), e.t()), ShapeMismatch,
     r"Add takes 2 inputs \(a, b\), got 3"),
    ("Relu, 2 inputs", lambda e: e.dev.run("Relu", e.t(), e.t()), ShapeMismatch,
     r"Relu takes 1 input \(x\), got 2"),
    ("Add, an extra None", lambda e: e.dev.run("Add", e.t(), e.t(), None), ShapeMismatch,
     "got 3"),
    ("Clip, 4 inputs", lambda e: e.dev.run("Clip", *[e.t()] * 4), ShapeMismatch,
     "Clip takes 1 to 3 inputs"),
    ("Where, 4 inputs", lambda e: e.dev.run("Where", *[e.t()] * 4), ShapeMismatch,
     "Where takes 3 inputs"),
    ("golden, 3 arrays", lambda e: get_op("Add").reference(*[np.ones(3, np.float32)] * 3),
     ShapeMismatch, "Add takes 2 inputs"),
    ("infer, 3 specs", lambda e: get_op("Mul").infer([ixl.hixl.ArgSpec((3,), "float16")] * 3),
     ShapeMismatch, "Mul takes 2 inputs"),
    ("graph node, 3 inputs", _extra_graph_input, ShapeMismatch, "Add takes 2 inputs"),
    # 2. foreign and freed tensors, on every path
    ("foreign, native", lambda e: e.other.run("Relu", e.t()), KernelStartFailed,
     r"Relu input x \('tensor'\) is a tensor of device 910B1#\d+, not of 910B1#\d+"),
    ("foreign, second input", lambda e: e.dev.run("Add", e.t(), e.t(dev=e.other)),
     KernelStartFailed, "Add input b .* is a tensor of device"),
    ("foreign, shim", lambda e: e.other.run("Add", e.t(dtype="int32"), e.t(dtype="int32")),
     KernelStartFailed, "is a tensor of device"),
    ("foreign, view", lambda e: e.other.run(
        "Reshape", e.t(), e.t(shape=(1,), dtype="int64", value=32, dev=e.other)),
     KernelStartFailed, "Reshape input data .* is a tensor of device"),
    ("foreign, graph feed", lambda e: e.other.run_graph(e.graph(), {"x": e.t()}),
     KernelStartFailed, "graph feed x .* is a tensor of device"),
    ("foreign, write", lambda e: e.other.write(e.t(), np.ones((4, 8))), KernelStartFailed,
     "write target .* is a tensor of device"),
    ("freed, native", lambda e: e.dev.run("Relu", e.freed()), KernelStartFailed, "was freed"),
    ("freed, view", lambda e: e.dev.run("Reshape", e.freed(), e.t(shape=(1,), dtype="int64",
                                                                  value=32)),
     KernelStartFailed, "Reshape input data .* was freed"),
    ("freed, shim", lambda e: e.dev.run("Add", e.freed(dtype="int32"), e.t(dtype="int32")),
     KernelStartFailed, "was freed"),
    ("freed, graph feed", lambda e: e.dev.run_graph(e.graph(), {"x": e.freed()}),
     KernelStartFailed, "graph feed x .* was freed"),
    ("freed, write", lambda e: e.dev.write(e.freed(), np.ones((4, 8))), KernelStartFailed,
     "was freed"),
    ("freed, numpy", lambda e: e.freed().numpy(), KernelStartFailed, "was freed"),
    ("closed, numpy", lambda e: _closed(e).numpy(), DeviceClosed, "which is closed"),
    ("closed, run", lambda e: e.dev.run("Relu", _closed(e)), DeviceClosed, "is closed"),
    ("closed, tensor", lambda e: (e.dev.close(), e.dev.tensor(np.ones(3)))[1], DeviceClosed,
     "is closed"),
    ("closed device's tensor elsewhere", lambda e: e.other.run("Relu", _closed(e)),
     KernelStartFailed, "is a tensor of device"),
    # 4. memory, before anything is made
    ("device memory", lambda e: e.dev.empty((1 << 40,), "float32"), OutOfMemory,
     r"out of device memory on 910B1: tensor needs 4398046511104 bytes, 0 of 68719476736 are "
     r"live \(3.9 TiB over the device's 64.0 GiB\)"),
    ("host memory", _host_too_small, OutOfMemory,
     r"out of host memory: tensor on 910B1 needs 4.0 MiB, the host has 1.0 MiB available "
     r"\(3.0 MiB short"),
    # 6. values of the wrong kind, with the culprit named
    ("empty, negative dim", lambda e: e.dev.empty((-1, 4), "float16"), ShapeMismatch,
     r"shape \(-1, 4\): negative dim"),
    ("empty, float dim", lambda e: e.dev.empty((2.5,), "float16"), BadInput,
     r"dims are integers, got float 2.5"),
    ("empty, string dim", lambda e: e.dev.empty(("4",), "float16"), BadInput,
     "dims are integers, got str '4'"),
    ("empty, shape a string", lambda e: e.dev.empty("4", "float16"), BadInput,
     "a shape is a tuple of non-negative integers"),
    ("empty, bool dim", lambda e: e.dev.empty((True,), "float16"), BadInput,
     "got bool True"),
    ("empty, unknown dtype", lambda e: e.dev.empty((4,), "floaty"), DtypeError,
     "unknown dtype 'floaty'"),
    ("empty, dtype None", lambda e: e.dev.empty((4,), None), BadInput,
     "a dtype is a name such as 'float16', got None"),
    ("tensor of objects", lambda e: e.dev.tensor(np.array([object()])), DtypeError,
     "has no name in the op database"),
    ("tensor of strings", lambda e: e.dev.tensor(["a", "b"]), DtypeError,
     "has no name in the op database"),
    ("tensor, ragged list", lambda e: e.dev.tensor([[1], [1, 2]]), BadInput, "not an array"),
    ("tensor of a tensor", lambda e: e.dev.tensor(e.t()), BadInput,
     "is a device tensor already"),
    ("tensor, unknown dtype", lambda e: e.dev.tensor(np.ones(3), dtype="nope"), DtypeError,
     "unknown dtype 'nope'"),
    ("write, wrong shape", lambda e: e.dev.write(e.t(), np.ones((8, 4))), ShapeMismatch,
     r"write of shape \(8, 4\) into tensor of shape \(4, 8\)"),
    ("write into an array", lambda e: e.dev.write(np.ones(3), np.ones(3)), BadInput,
     "write target must be a device tensor"),
    ("device(None)", lambda e: ixl.device(None), UnknownChipError,
     "a chip is named by a string, one of 910B1"),
    ("device(910)", lambda e: ixl.device(910), UnknownChipError, "got int 910"),
    ("device('910C')", lambda e: ixl.device("910C"), UnknownChipError, "unknown chip '910C'"),
    ("run(None)", lambda e: e.dev.run(None, e.t()), BadInput,
     "an op is named by a string such as 'Add', got NoneType None"),
    ("run(123)", lambda e: e.dev.run(123, e.t()), BadInput, "got int 123"),
    ("run, unknown op", lambda e: e.dev.run("add", e.t(), e.t()), UnknownOp, "did you mean Add"),
    ("run, a host array", lambda e: e.dev.run("Add", e.t(), np.ones((4, 8))), BadInput,
     "Add input b must be a device tensor"),
    ("run, a list", lambda e: e.dev.run("Relu", [1, 2]), BadInput,
     "Relu input x must be a device tensor"),
    ("run_graph, list of feeds", lambda e: e.dev.run_graph(e.graph(), [np.ones(3)]), BadInput,
     "run_graph feeds are a dict"),
    ("run_graph, unknown feed", lambda e: e.dev.run_graph(
        e.graph(), {"x": np.ones(3, np.float16), "z": np.ones(3)}), BadInput,
     "graph feeds 'z' are not inputs of the graph"),
    ("run_graph, missing feed", lambda e: e.dev.run_graph(e.graph(), {}), ShapeMismatch,
     "graph inputs x were not fed"),
    ("run_graph, not a graph", lambda e: e.dev.run_graph({"nodes": []}, {}), BadInput,
     "run_graph takes a Graph, got dict"),
    ("graph, unknown op", lambda e: Graph().add("Relux", "x"), UnknownOp, "did you mean Relu"),
    ("attribute, int as a string", lambda e: e.dev.run("Softmax", e.t(), axis="1"), AttrError,
     "Softmax: attribute axis must be an integer, got str '1'"),
    ("attribute, list for a float", lambda e: e.dev.run("LeakyRelu", e.t(), alpha=[1, 2]),
     AttrError, "LeakyRelu: attribute alpha must be a number, got list"),
    ("attribute, string for a float", lambda e: e.dev.run("Adds", e.t(), scalar="x"),
     AttrError, "attribute scalar must be a number, got str 'x'"),
    ("attribute, int for a string", lambda e: e.dev.run("Cast", e.t(), to=5), AttrError,
     "attribute to must be a string, got int 5"),
    ("attribute, string for a list", lambda e: e.dev.run("Transpose", e.t(), perm="10"),
     AttrError, "attribute perm must be a list of integers, got str"),
    ("attribute, list of strings", lambda e: e.dev.run("Transpose", e.t(), perm=["1", "0"]),
     AttrError, "perm must be a list of integers"),
    ("attribute, float for an int", lambda e: e.dev.run(
        "Conv", e.t(shape=(1, 2, 8)), e.t(shape=(2, 1, 3)), group=1.5), AttrError,
     "attribute group must be an integer, got float 1.5"),
    ("attribute, unknown", lambda e: e.dev.run("Relu", e.t(), alpha=1.0), AttrError,
     "unknown attribute"),
    ("attribute, out of range", lambda e: e.dev.run("Softmax", e.t(), axis=5), AttrError,
     "axis 5 is out of range"),
    # 8. Conv in 1-D is checked as such
    ("Conv 1-D, 2-D pads", lambda e: e.dev.run(
        "Conv", e.t(shape=(1, 2, 8)), e.t(shape=(3, 2, 3)), pads=[1, 1, 1, 1]), AttrError,
     r"pads must be 2 non-negative ints \(begin, end\) for a 1-D convolution"),
    ("Conv 1-D, 2-D strides", lambda e: e.dev.run(
        "Conv", e.t(shape=(1, 2, 8)), e.t(shape=(3, 2, 3)), strides=[1, 1]), AttrError,
     r"strides must be 1 positive int\(s\) \(L\)"),
    ("Conv 3-D", lambda e: e.dev.run("Conv", e.t(shape=(1, 1, 4, 4, 4)),
                                     e.t(shape=(1, 1, 2, 2, 2))), ShapeMismatch,
     "Conv: 1-D or 2-D only"),
    ("Conv, x 1-D and w 2-D", lambda e: e.dev.run("Conv", e.t(shape=(1, 1, 4)),
                                                  e.t(shape=(1, 1, 2, 2))), ShapeMismatch,
     "of the same rank"),
]

ENV_CASES = [
    ("IXL_LOG", "verbose", "IXL_LOG='verbose' is not allowed: debug"),
    ("IXL_THREADS", "abc", "IXL_THREADS='abc' is not allowed: a positive integer"),
    ("IXL_THREADS", "0", "IXL_THREADS='0' is not allowed"),
    ("IXL_THREADS", "-2", "IXL_THREADS='-2' is not allowed"),
    ("IXL_DEBUG", "maybe", "IXL_DEBUG='maybe' is not allowed: one of 1, true"),
    ("IXL_TUNING_CACHE", "{dir}", "is a directory: give the path of a JSON file"),
    ("IXL_TUNING_CACHE", "{bad_json}", "is not a readable JSON file"),
    ("IXL_TUNING_CACHE", "{list_json}", "holds no JSON object"),
    ("IXL_TUNING_CACHE", "{file}/tuning.json", "cannot be created"),
    ("IXL_TUNING_CACHE", "", "IXL_TUNING_CACHE is empty"),
]


@pytest.fixture
def files(tmp_path):
    """A directory, a plain file, bad JSON, a text file named .npy and a small ONNX model."""
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("not a directory")
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "text.npy").write_text("1 2 3\n")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.ones(3, np.float32))
    return {"tmp": str(tmp_path), "dir": str(tmp_path / "adir"), "file": str(tmp_path / "afile"),
            "bad_json": str(tmp_path / "bad.json"), "list_json": str(tmp_path / "list.json")}


def _snapshot(root):
    return sorted((str(p), p.stat().st_size) for p in root.rglob("*"))


@pytest.mark.parametrize("call, error, text", [c[1:] for c in API_CASES],
                         ids=[c[0] for c in API_CASES])
def test_a_bad_call_raises_one_ixl_error_and_leaves_nothing(call, error, text, monkeypatch):
    e = Env(monkeypatch)
    try:
        with pytest.raises(error, match=text) as info:
            call(e)
        assert isinstance(info.value, IXL_ERRORS)
        assert "\n" not in str(info.value)
        for dev in (e.dev, e.other):       # the refused call freed whatever it had made
            if not dev.closed:
                assert dev.allocator.stats.live_bytes == e.live_expected(dev)
    finally:
        for t in e.made:
            if not t.device.closed:
                t.free()
        for dev in (e.dev, e.other):
            if not dev.closed:
                assert dev.allocator.stats.live_bytes == 0
                dev.close()


@pytest.mark.parametrize("name, value, text", ENV_CASES, ids=[f"{c[0]}={c[1]}" for c in ENV_CASES])
def test_a_bad_environment_variable_is_named_when_a_device_is_made(name, value, text, files,
                                                                   monkeypatch):
    monkeypatch.setenv(name, value.format(**files))
    with pytest.raises(BadInput, match=text):
        ixl.device("910B1")


def test_good_environment_values_are_taken(monkeypatch, tmp_path):
    for name, value in (("IXL_LOG", "DEBUG"), ("IXL_THREADS", "2"), ("IXL_DEBUG", "yes"),
                        ("IXL_TUNING_CACHE", str(tmp_path / "new" / "tuning.json"))):
        monkeypatch.setenv(name, value)
    with ixl.device("910B1") as dev:
        assert dev.debug


def test_an_extra_input_leaves_every_tensor_as_it_was():
    dev = ixl.device("910B1")
    a, b = dev.tensor(np.ones(8, np.float16)), dev.tensor(np.ones(8, np.float16))
    c = dev.tensor(np.full(8, 7, np.float16))
    with pytest.raises(ShapeMismatch):
        dev.run("Add", a, b, c)
    assert (c.numpy() == 7).all() and dev.last_profile is None
    dev.close()


def test_devices_have_distinct_address_ranges():
    with ixl.device("910B1") as d1, ixl.device("910B1") as d2:
        a, b = d1.tensor(np.ones(4, np.float32)), d2.tensor(np.ones(4, np.float32))
        assert a.addr != b.addr and d2.backend.gm.segment_at(a.addr) is None
        a.free()
        b.free()


def test_a_tensor_freed_twice_is_freed_once():
    with ixl.device("910B1") as dev:
        t = dev.tensor(np.ones(4, np.float32))
        t.free()
        t.free()
        assert dev.allocator.stats.live_bytes == 0


def test_host_memory_is_read_from_the_system():
    available = allocator.host_available_bytes()
    assert available is not None and available > 0


# ---------------------------------------------------------------- the command line

MODEL = "{tmp}/m.onnx"
CLI_CASES = [
    # 1. extra inputs
    ({}, ["run", "Add", "--shape", "4", "--shape", "4", "--shape", "4"],
     r"Add takes 2 inputs (a, b), got 3"),
    ({}, ["run", "Relu", "--shape", "4", "--shape", "4"], "Relu takes 1 input (x), got 2"),
    ({}, ["run", "Where", *["--shape", "4"] * 4], "Where takes 3 inputs"),
    ({}, ["tune", "Add", "--shape", "4", "--shape", "4", "--shape", "4"], "Add takes 2 inputs"),
    # 4. memory: which limit, by how much, before any array is made
    ({}, ["run", "Add", "--shape", "1000000,1000000"],
     "out of device memory on 910B1: Add float16 [1000000, 1000000] , [1000000, 1000000] needs "
     "6000000000000 bytes, 0 of 68719476736 are live (5.4 TiB over the device's 64.0 GiB)"),
    ({}, ["run", "Add", "--shape", "1000000,1000000", "--timing-only"],
     "out of device memory on 910B1"),
    ({}, ["run", "Add", "--shape", "100000,100000"], "out of host memory: Add float16"),
    ({}, ["run", "Relu", "--shape", "200000,200000", "--dtype", "float32"],
     "out of device memory on 910B1"),
    # 5. output paths, before running
    ({}, ["run", "Add", "--shape", "4", "--trace", "{tmp}/missing/t.json"],
     "--trace {tmp}/missing/t.json: directory {tmp}/missing does not exist"),
    ({}, ["run", "Add", "--shape", "4", "--trace", "{dir}"], "--trace {dir}: is a directory"),
    ({}, ["run", "Add", "--shape", "4", "--trace", "{file}/t.json"],
     "{file} is a file, not a directory"),
    ({}, ["run", "Add", "--shape", "4", "--plot", "{tmp}/missing/p.png"], "does not exist"),
    ({}, ["run", "Add", "--shape", "4", "--plot", "{dir}"], "--plot {dir}: is a directory"),
    ({}, ["run", "Add", "--shape", "4", "--plot", "p.xyz"], "matplotlib cannot write .xyz"),
    ({}, ["run", "Trilu", "--shape", "4,4", "--plot", "p.png"],
     "--plot: Trilu has no native kernel (it runs on the shim), so there is no kernel "
     "launch to draw"),
    # 6. careless values: a negative number after an option is its value, checked as such
    ({}, ["run", "Add", "--shape", "-3,4"], "shape '-3,4' does not parse: give comma-separated "
     "non-negative integers"),
    ({}, ["run", "Add", "--shape", "3,4", "--seed", "-1"],
     "argument --seed: -1 is negative: a seed is an integer from 0 up"),
    ({}, ["run", "Add", "--shape", "3,4", "--seed", "one"],
     "argument --seed: 'one' is not an integer"),
    ({}, ["verify", "--op", "Add", "--seed", "-5"], "argument --seed: -5 is negative"),
    ({}, ["onnx", "run", MODEL, "--random", "--seed", "-1"], "argument --seed: -1 is negative"),
    ({}, ["run", "Reshape", "--shape", "4", "--shape", "2", "--value", "shape=[2,2]", "--plot",
          "p.png"], "--plot: Reshape is answered with a view"),
    ({}, ["model", "minilm", "--text", "hi", "--out", "{dir}"], "--out {dir}: is a directory"),
    ({}, ["model", "minilm", "--text", "hi", "--out", "{tmp}/missing/emb"],
     "--out {tmp}/missing/emb: directory {tmp}/missing does not exist"),
    ({}, ["onnx", "run", MODEL, "--input", "x={tmp}/x.npy", "--save", "{file}"],
     "--save {file}: is a file; give a directory"),
    # 5. tune shows the real error
    ({}, ["tune", "Add", "--shape", "3,4", "--shape", "5"],
     "Add: shapes (3, 4) and (5,) do not broadcast"),
    ({}, ["tune", "Trilu", "--shape", "4,4"], "Trilu has no native kernel to tune"),
    ({}, ["tune", "Add", "--shape", "4", "--then", "Gelux"], "unknown op 'Gelux'"),
    ({}, ["tune", "Add", "--shape", "4", "--attr", "axis=1"], "unknown attribute(s) axis"),
    # 6. values of the wrong kind, the culprit named
    ({}, ["run", "Softmax", "--shape", "4,4", "--attr", "axis=abc"],
     "Softmax: attribute axis must be an integer, got str 'abc'"),
    ({}, ["run", "LeakyRelu", "--shape", "4", "--attr", "alpha=[1,2]"],
     "attribute alpha must be a number, got list [1, 2]"),
    ({}, ["run", "Adds", "--shape", "4", "--attr", "scalar=x"],
     "attribute scalar must be a number, got str 'x'"),
    ({}, ["run", "Cast", "--shape", "4", "--attr", "to=5"], "attribute to must be a string"),
    ({}, ["run", "Transpose", "--shape", "2,3", "--attr", "perm=1"],
     "attribute perm must be a list of integers, got int 1"),
    ({}, ["run", "Transpose", "--shape", "2,3", "--attr", 'perm=[1,"a"]'],
     "perm must be a list of integers"),
    ({}, ["run", "Softmax", "--shape", "4", "--attr", "axis"],
     "--attr 'axis' does not parse: use NAME=VALUE"),
    ({}, ["run", "Softmax", "--shape", "4", "--attr", "=1"], "does not parse"),
    ({}, ["run", "Softmax", "--shape", "4", "--attr", "axis=0", "--attr", "axis=-1"],
     "--attr axis is given twice (0 and -1)"),
    ({}, ["run", "Add", "--shape", "4", "--attr", "bogus=1"], "unknown attribute(s) bogus"),
    ({}, ["run", "Softmax", "--shape", "4", "--attr", "axis=3"], "axis 3 is out of range"),
    ({}, ["run", "TopK", "--shape", "8", "--shape", "1", "--value", "k=[1,2]"],
     "--value k: 2 value(s) for an input of shape [1], which holds 1"),
    ({}, ["run", "TopK", "--shape", "8", "--shape", "1", "--value", "k=abc"],
     "--value k='abc': give JSON numbers"),
    ({}, ["run", "TopK", "--shape", "8", "--shape", "1", "--value", "k=1.5"],
     "--value k: k is int64, give whole numbers"),
    ({}, ["run", "TopK", "--shape", "8", "--shape", "1", "--value", "kk=1"],
     "--value for kk: TopK's inputs are x, k"),
    ({}, ["run", "TopK", "--shape", "8", "--shape", "1", "--value", "k=1", "--value", "k=2"],
     "--value k is given twice"),
    ({}, ["run", "Add", "--shape=-1,4"], "shape '-1,4' does not parse"),
    ({}, ["run", "Add", "--shape", "4,,4"], "shape '4,,4' does not parse"),
    ({}, ["run", "Add", "--shape", "4", "--dtype", "float8"], "unknown dtype 'float8'"),
    ({}, ["run", "Add", "--shape", "4", "--dtype", "int8"], "Add does not support int8"),
    ({}, ["run", "Add", "--shape", "4", "--chip", "910C"], "unknown chip '910C'"),
    ({}, ["run", "Addd", "--shape", "4"], "unknown op 'Addd' (did you mean Add"),
    ({}, ["run", "Add", "--shape", "3,4", "--shape", "5"], "do not broadcast"),
    ({}, ["run", "Conv", "--shape", "1,2,8", "--shape", "3,2,3", "--attr", "pads=[1,1,1,1]"],
     "pads must be 2 non-negative ints (begin, end) for a 1-D convolution"),
    ({}, ["run", "Conv", "--shape", "1,1,4,4,4", "--shape", "1,1,2,2,2"],
     "Conv: 1-D or 2-D only"),
    ({}, ["model", "minilm", "--text", "ok", "--text", "ab\udcff\udcfecd"],
     "--text number 2 is not valid UTF-8: byte(s) ff fe at character 2"),
    ({}, ["model", "minilm", "--text", "a\ud800b"],
     "--text holds a lone surrogate, U+D800, at character 1, which UTF-8 cannot encode"),
    ({}, ["onnx", "run", MODEL, "--input", "x={tmp}/text.npy"],
     "--input x: {tmp}/text.npy is not a .npy file"),
    ({}, ["calibrate", "--chip", "nope"], "unknown chip 'nope'"),
    ({}, ["verify", "--op", "Nope"], "unknown op 'Nope'"),
    # usage mistakes: one line, not argparse's usage block
    ({}, ["list", "--bogus"], "unrecognized arguments: --bogus"),
    ({}, ["run", "Add"], "the following arguments are required: --shape"),
    ({}, ["model", "minilm", "--dtype", "int8", "--text", "x"], "argument --dtype: invalid choice"),
    ({}, ["frob"], "argument command: invalid choice: 'frob'"),
    ({}, [], "the following arguments are required: command"),
    # environment variables, at start-up
    ({"IXL_LOG": "verbose"}, ["list"], "IXL_LOG='verbose' is not allowed"),
    ({"IXL_THREADS": "x"}, ["run", "Relu", "--shape", "4"], "IXL_THREADS='x' is not allowed"),
    ({"IXL_DEBUG": "2"}, ["run", "Relu", "--shape", "4"], "IXL_DEBUG='2' is not allowed"),
    ({"IXL_TUNING_CACHE": "{dir}"}, ["list"], "IXL_TUNING_CACHE='{dir}' is a directory"),
    ({"IXL_TUNING_CACHE": "{file}/t.json"}, ["tune", "Add", "--shape", "4", "--save"],
     "IXL_TUNING_CACHE='{file}/t.json' cannot be created: {file} is a file"),
    ({"IXL_LOG": "loud", "IXL_THREADS": "many"}, ["list"],
     "IXL_LOG='loud' is not allowed: debug (print each launch's descs, addresses and tiling) or "
     "info (the default); IXL_THREADS='many' is not allowed"),
]


@pytest.fixture
def devices(monkeypatch):
    """Every device made during a test."""
    made = []
    init = Device.__init__

    def tracking(self, *args, **kwargs):
        made.append(self)
        init(self, *args, **kwargs)

    monkeypatch.setattr(Device, "__init__", tracking)
    return made


def _run_cli(argv, env, files, monkeypatch, capsys):
    monkeypatch.chdir(files["tmp"])
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(**files))
    rc = main([a.format(**files) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("env, argv, text", CLI_CASES,
                         ids=[" ".join(c[1])[:60] or "no command" for c in CLI_CASES])
def test_a_bad_command_line_is_one_line_on_stderr(env, argv, text, files, devices, monkeypatch,
                                                  capsys, tmp_path):
    before = _snapshot(tmp_path)
    rc, out, err = _run_cli(argv, env, files, monkeypatch, capsys)
    assert rc == 2
    assert out == ""
    assert err.startswith("ixl: error: ") and err.count("\n") == 1, err
    assert text.format(**files) in err
    assert "(see: ixl explain '" in err and "Traceback" not in err
    assert _snapshot(tmp_path) == before                 # nothing written
    gc.collect()
    assert all(d.allocator.stats.live_bytes == 0 for d in devices if hasattr(d, "allocator"))


def test_an_unknown_error_is_one_line_asking_for_the_debug_log(files, monkeypatch, capsys):
    def broken(args):
        raise RuntimeError("something\nunexpected")
    monkeypatch.setattr("ixl.cli.cmd_list", broken)
    rc, out, err = _run_cli(["list"], {}, files, monkeypatch, capsys)
    assert rc == 2 and err == ("ixl: error: RuntimeError: something unexpected (unexpected: run "
                               "with IXL_LOG=debug to see the traceback)\n")
    rc, out, err = _run_cli(["list"], {"IXL_LOG": "debug"}, files, monkeypatch, capsys)
    assert rc == 2 and err.startswith("Traceback") and "in broken" in err
    assert err.splitlines()[-1].startswith("ixl: error: RuntimeError: something unexpected")


def test_ctrl_c_in_the_command_is_one_line_and_exit_130(files, monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt
    monkeypatch.setattr("ixl.cli.cmd_list", interrupted)
    rc, out, err = _run_cli(["list"], {}, files, monkeypatch, capsys)
    assert rc == 130 and err == "ixl: interrupted\n"


def _declining_device(chip, **kwargs):
    """A device whose Add kernel declines every case at tiling time (as a too-long broadcast
    row would), so the shim runs."""
    def tiling(ins, outs, attrs, chip, config):
        raise KernelDeclined("a broadcast row longer than a tile")
    registry = Registry()
    registry._loaded = True
    registry.register(KernelEntry(op="Add", kernel=lambda ctx, *t: None, tiling=tiling,
                                  dtypes=("float16",), built_for_runtime="1.0"))
    return ixl.device(chip, registry=registry, **kwargs)


def test_trace_of_a_run_that_took_the_shim_is_its_host_span(files, monkeypatch, capsys,
                                                            tmp_path):
    monkeypatch.setattr("ixl.cli.device", _declining_device)
    rc, out, err = _run_cli(["run", "Add", "--shape", "4", "--trace", "t.json"], {}, files,
                            monkeypatch, capsys)
    assert rc == 0 and "PASS" in out and "path: shim (a broadcast row longer than a tile)" in out
    assert "trace written to t.json: the shim's host span (no kernel launch to draw)" in out
    trace = json.loads((tmp_path / "t.json").read_text())
    (span,) = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert span["name"] == "Add on the shim" and span["args"]["reason"] == \
        "a broadcast row longer than a tile"
    assert span["dur"] == trace["otherData"]["host_us"] > 0


def test_plot_of_a_run_that_took_the_shim_writes_nothing_and_says_so(files, monkeypatch,
                                                                     capsys, tmp_path):
    monkeypatch.setattr("ixl.cli.device", _declining_device)
    rc, out, err = _run_cli(["run", "Add", "--shape", "4", "--trace", "t.json", "--plot",
                             "p.png"], {}, files, monkeypatch, capsys)
    assert rc == 2 and "PASS" in out
    assert err == ("ixl: error: --trace and --plot: nothing written: Add ran on the shim (a "
                   "broadcast row longer than a tile), which launches no kernel (see: ixl "
                   "explain 'bad input')\n")
    assert not (tmp_path / "t.json").exists() and not (tmp_path / "p.png").exists()


def test_trace_of_an_op_without_a_kernel_is_its_host_span(files, monkeypatch, capsys, tmp_path):
    rc, out, err = _run_cli(["run", "Trilu", "--shape", "4,4", "--trace", "t.json"], {}, files,
                            monkeypatch, capsys)
    assert rc == 0, err
    trace = json.loads((tmp_path / "t.json").read_text())
    assert trace["otherData"]["path"] == "shim" and trace["otherData"]["op"] == "Trilu"


def test_profile_of_a_shim_run_says_there_is_no_launch(capsys):
    assert main(["run", "Trilu", "--shape", "4,4", "--profile"]) == 0
    assert "profile: no kernel launch to profile (Trilu ran on the shim: no native " \
           "kernel)" in capsys.readouterr().out


def test_output_paths_are_reported_as_written(files, monkeypatch, capsys, tmp_path):
    rc, out, err = _run_cli(["run", "Relu", "--shape", "64", "--plot", "p", "--trace", "t",
                             "--json"], {}, files, monkeypatch, capsys)
    assert rc == 0, err
    result = json.loads(out)
    assert result["plot"] == "p.png" and (tmp_path / "p.png").is_file()
    assert result["trace"] == "t" and (tmp_path / "t").is_file()


# ---------------------------------------------------------------- real processes


def test_ctrl_c_during_a_long_run_prints_one_line_and_exits_130(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", CLI_ENTRY, "run", "Add", "--shape",
                             "100000,100000", "--timing-only", "--trace", "t.json"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stderr.readline() == "ready\n"
        time.sleep(1.0)                      # well inside the run (about 30 s of simulation)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:              # a run that did not stop must not outlive it
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130
    assert out == "" and err == "ixl: interrupted\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, text", [
    (["run", "Add", "--shape", "4", "--shape", "4", "--shape", "4"], "Add takes 2 inputs"),
    (["run", "Add", "--shape", "1000000,1000000"], "out of device memory on 910B1"),
    (["bogus"], "invalid choice: 'bogus'"),
])
def test_a_bad_command_line_in_a_real_process(argv, text):
    done = subprocess.run([sys.executable, "-m", "ixl.cli", *argv], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and text in done.stderr
