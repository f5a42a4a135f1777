"""Helpers the tests share (fixtures stay in conftest.py; helpers are imported from here)."""

import numpy as np

import ixl
from ixl.ascend import lang as asc
from ixl.nixl import KernelEntry, LaunchPlan
from ixl.nixl.registry import Registry


def device_with_kernel(kernel, *, op="Add", block_dim=1, tiling=None, built_for="1.0",
                       debug=True, chip="910B1"):
    """A device whose registry holds only `kernel` for `op` (for deliberately broken kernels)."""
    reg = Registry(load_library=False)
    reg.register(KernelEntry(
        op=op, kernel=kernel,
        tiling=lambda ins, outs, attrs, c, config: LaunchPlan(block_dim, tiling),
        dtypes=("float16", "bfloat16", "float32"), built_for_runtime=built_for))
    return ixl.device(chip, debug=debug, registry=reg)


def random_pair(shape, dtype=np.float16, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype))


def ub_tensor(core, dtype, count, fill=None):
    """A fresh UB scratch tensor of `count` elements on `core`, optionally filled."""
    pipe = core.pipes[0] if core.pipes else asc.TPipe()
    b = asc.TBuf()
    pipe.init_buffer(b, count * np.dtype(dtype).itemsize)
    t = b.get(dtype, count)
    if fill is not None:
        t.view()[:] = fill
    return t


def run_specs(dev, op, specs, attrs=None, config=None, arrays=None):
    """Run `op` on inputs made from `specs` (empty tensors, or `arrays` when given; a spec's
    value when it has one), free the inputs and return the outputs as a tuple."""
    if arrays is None:
        ins = [None if s is None else dev.empty(s.shape, s.dtype) if s.value is None
               else dev.tensor(np.asarray(s.value, ixl.hixl.to_numpy(s.dtype))) for s in specs]
    else:
        ins = [None if a is None else dev.tensor(a) for a in arrays]
    try:
        outs = dev.run(op, *ins, config=config, **(attrs or {}))
    finally:
        for t in ins:
            if t is not None:
                t.free()
    return outs if isinstance(outs, tuple) else (outs,)


def run_arrays(dev, op, arrays, config=None, **attrs):
    """Run `op` on host arrays (None omits an optional input); returns (outputs as arrays,
    run record), every tensor freed."""
    ins = [None if a is None else dev.tensor(a) for a in arrays]
    try:
        outs = dev.run(op, *ins, config=config, **attrs)
    finally:
        for t in ins:
            if t is not None:
                t.free()
    outs = outs if isinstance(outs, tuple) else (outs,)
    try:
        return [o.numpy().reshape(o.shape) for o in outs], dev.last_profile
    finally:
        for o in outs:
            o.free()


# The command's own entry point as a shell starts it: SIGINT at its default handler and not
# blocked, whatever disposition or mask the test's worker process inherited or was left with;
# it says when it is past its imports (a Ctrl-C during the interpreter's start-up is Python's,
# not the command's).
CLI_ENTRY = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); import ixl.cli; "
             "print('ready', file=sys.stderr, flush=True); sys.exit(ixl.cli.main(sys.argv[1:]))")
