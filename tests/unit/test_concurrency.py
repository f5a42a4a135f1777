"""One device shared by eight threads, from a cold start: the op database and the kernel
registry load once for all of them, every result equals the golden, every run takes the path
it takes alone, and nothing stays allocated. Runs in a fresh interpreter, so that the first use
of the process is part of the test, with a tiny switch interval so threads interleave often."""

import json
import subprocess
import sys

SCRIPT = r'''
import json, sys, threading
import numpy as np
sys.setswitchinterval(1e-6)
import ixl
from ixl.hixl import database, get_op
from ixl.hixl.dtypes import name_of
from ixl.nixl import REGISTRY
from ixl.verify import compare

dev = ixl.device("910B1")
cold = not REGISTRY._kernels and not database._OPS
THREADS, RUNS = 8, 200
CASES = [   # op, inputs, attrs: native, broadcast, axis, shim (int32) and view runs
    ("Add", lambda r: [r.uniform(-2, 2, (64, 33)).astype(np.float16)] * 2, {}),
    ("Relu", lambda r: [r.uniform(-2, 2, (100,)).astype(np.float32)], {}),
    ("Mul", lambda r: [r.uniform(-2, 2, (8, 40)).astype(np.float16),
                       r.uniform(-2, 2, (40,)).astype(np.float16)], {}),
    ("Softmax", lambda r: [r.uniform(-2, 2, (16, 40)).astype(np.float32)], {"axis": -1}),
    ("Add", lambda r: [r.integers(-9, 9, (5, 7)).astype(np.int32)] * 2, {}),
    ("Reshape", lambda r: [r.uniform(-2, 2, (6, 4)).astype(np.float16),
                           np.array([4, 6], np.int64)], {}),
]
start = threading.Barrier(THREADS)
errors = []

def work(k):
    rng = np.random.default_rng(k)
    start.wait()
    try:
        for i in range(RUNS):
            op, make, attrs = CASES[(i + k) % len(CASES)]
            arrays = make(rng)
            inputs = [dev.tensor(a) for a in arrays]
            out = dev.run(op, *inputs, **attrs)
            schema = get_op(op)
            want = schema.reference(*arrays, **attrs)[0]
            if not compare(out.numpy(), want, schema.tolerance(name_of(arrays[0].dtype))).ok:
                errors.append(f"thread {k} run {i}: {op} differs from the golden")
            out.free()
            for t in inputs:
                t.free()
    except Exception as e:
        errors.append(f"thread {k}: {e!r}")

threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
paths = {}
for r in dev.stream:
    paths.setdefault(f"{r.op} {r.dtype}", set()).add(r.path)
print(json.dumps({"cold": cold, "errors": errors[:5], "runs": len(dev.stream),
                  "paths": {k: sorted(v) for k, v in paths.items()},
                  "live": dev.allocator.stats.live_bytes, "leaks": dev.close()}))
'''


def test_eight_threads_share_one_device_from_a_cold_start():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["cold"], "the registry was loaded before the threads started"
    assert result["errors"] == []
    assert result["runs"] == 8 * 200
    assert result["paths"] == {"Add float16": ["native"], "Relu float32": ["native"],
                               "Mul float16": ["native"], "Softmax float32": ["native"],
                               "Add int32": ["shim"], "Reshape float16": ["view"]}
    assert result["live"] == 0 and result["leaks"] == []
