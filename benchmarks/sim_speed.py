"""Simulator speed: the same work on the simulated chip (release mode) and in plain numpy, timed
side by side in this one process, best of N, reported as ratios. The chip runs each launch
twice over: cold (IXL_REPLAY=0: the kernel's Python runs every time) and replayed (the launch
traced once, then run from its trace: ascend/replay.py); both give the same modeled time.

The reference is the plain implementation of the same work: an op in numpy (half inputs
computed in float32 and rounded once, as the kernels do); MiniLM as a numpy forward of the same
model written here, and in onnxruntime on one thread (the `ort` extra; the row is left out
without it); a SmolLM2-135M decode step in onnxruntime, the same graph and weights. The tools
(`ixl verify --release`, `ixl calibrate`) have no reference: their wall time alone. A model's
cold column runs every launch's Python (IXL_REPLAY=0); its replayed column, once the model
ran, is what a user sees from the second run (a decode step: a token of a generation, the
prefill left out). Wall-clock time on a shared machine is noisy: compare the ratios, and rerun
on a quiet machine before reading much into one figure. Then a profile of one simulated
LayerNormalization shows where the simulator spends its time.

    python benchmarks/sim_speed.py [--repeats R] [--quick] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import math
import os
import pstats
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import ixl

F16, F32 = np.float16, np.float32


def best_of(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


@dataclass
class Row:
    work: str
    numpy_s: float | None           # the reference's time (None: the work has none)
    cold_s: float | None            # None: not measured (a row says why in its work)
    replay_s: float
    modeled_us: float | None

    def line(self) -> str:
        def ratio(t: float | None) -> str:
            return "" if t is None or self.numpy_s is None else f"{t / self.numpy_s:.1f}x"

        def ms(t: float | None, digits: int = 0) -> str:
            return "" if t is None else f"{t * 1e3:.{digits}f} ms"

        modeled = "" if self.modeled_us is None else f"{self.modeled_us:.1f} us"
        return (f"| {self.work} | {ms(self.numpy_s, 1)} | {ms(self.cold_s)} | "
                f"{ratio(self.cold_s)} | {ms(self.replay_s)} | {ratio(self.replay_s)} | "
                f"{modeled} |")


def cold_and_replayed(fn: Callable[[], float], repeats: int) -> tuple[float, float, float]:
    """Best wall times of `fn` (which returns its modeled time) with replay off, then on
    (after one traced run), and the modeled time, the same both ways."""
    os.environ["IXL_REPLAY"] = "0"
    cold = best_of(fn, repeats)
    modeled = fn()
    os.environ["IXL_REPLAY"] = "1"
    assert fn() == modeled                  # traced
    replayed = best_of(fn, repeats)
    assert fn() == modeled, "a replay moved a modeled time"
    return cold, replayed, modeled


# ---------------------------------------------------------------- the ops, and numpy's own

def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(F32) if x.dtype == F16 else x


def np_add(a, b):
    return (_wide(a) + _wide(b)).astype(a.dtype)


def np_layer_norm(x, g, b, eps=1e-5):
    w = _wide(x)
    mean = w.mean(axis=-1, keepdims=True)
    centered = w - mean
    var = np.mean(centered * centered, axis=-1, keepdims=True)
    return (centered / np.sqrt(var + eps) * _wide(g) + _wide(b)).astype(x.dtype)


def np_softmax(x):
    w = _wide(x)
    e = np.exp(w - w.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)


def np_matmul(a, b):
    return (_wide(a) @ _wide(b)).astype(a.dtype)


def op_row(dev, work: str, op: str, host: list[np.ndarray], reference, repeats: int) -> Row:
    """One op on the device (inputs uploaded once) against `reference` on the host arrays."""
    tensors = [dev.tensor(a) for a in host]

    def simulated() -> float:
        out = dev.run(op, *tensors)
        for t in out if isinstance(out, tuple) else (out,):
            t.free()
        return dev.last_profile.time_us

    simulated()                             # warm up: the output's GM is mapped once
    t_np = best_of(lambda: reference(*host), repeats)
    row = Row(work, t_np, *cold_and_replayed(simulated, repeats))
    assert dev.last_profile.path == "native", f"{op} ran on the {dev.last_profile.path}"
    assert dev.last_profile.launch.replay == "replayed"
    for t in tensors:
        t.free()
    return row


# ---------------------------------------------------------------- MiniLM in plain numpy

def _erf(x):
    """Abramowitz and Stegun 7.1.26 (absolute error under 1.5e-7): numpy has no erf."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                            + t * 1.061405429))))
    return s * (1.0 - poly * np.exp(-a * a))


class NumpyMiniLM:
    """all-MiniLM-L6-v2's encoder (BERT: 6 layers, 12 heads of 32) in float32 numpy, from the
    same safetensors file the simulated model is filled from."""

    def __init__(self, folder, layers: int = 6, heads: int = 12):
        from safetensors.numpy import load_file
        self.w = load_file(str(folder / "model.safetensors"))
        self.layers, self.heads = layers, heads

    @staticmethod
    def _norm(x, g, b, eps=1e-12):
        mean = x.mean(-1, keepdims=True)
        c = x - mean
        return c / np.sqrt((c * c).mean(-1, keepdims=True) + eps) * g + b

    def _linear(self, x, name):
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def __call__(self, ids, mask, types):
        w, n = self.w, ids.shape[-1]
        x = (w["embeddings.word_embeddings.weight"][ids[0]]
             + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][types[0]])
        x = self._norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = (1.0 - mask[0].astype(F32)) * np.finfo(F32).min
        d = x.shape[-1] // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}"
            q, k, v = (self._linear(x, f"{p}.attention.self.{m}").reshape(n, self.heads, d)
                       .transpose(1, 0, 2) for m in ("query", "key", "value"))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(d) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            ctx = (scores / scores.sum(-1, keepdims=True)) @ v
            attn = self._linear(ctx.transpose(1, 0, 2).reshape(n, -1),
                                f"{p}.attention.output.dense")
            x = self._norm(attn + x, w[f"{p}.attention.output.LayerNorm.weight"],
                           w[f"{p}.attention.output.LayerNorm.bias"])
            h = self._linear(x, f"{p}.intermediate.dense")
            h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))
            x = self._norm(self._linear(h, f"{p}.output.dense") + x,
                           w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"])
        return x


def minilm_rows(repeats: int) -> list[Row]:
    from ixl.models import MiniLM
    model = MiniLM("910B1", "float32")
    encoded = model.encode("The quick brown fox jumps over the lazy dog.")
    feeds = encoded.feeds
    plain = NumpyMiniLM(model.folder)
    hidden, _ = model.run(encoded)                       # warm up: the bucket's graph is built
    expected = plain(feeds["input_ids"], feeds["attention_mask"], feeds["token_type_ids"])
    np.testing.assert_allclose(hidden[:encoded.tokens], expected[:encoded.tokens], atol=2e-4)
    t_np = best_of(lambda: plain(feeds["input_ids"], feeds["attention_mask"],
                                 feeds["token_type_ids"]), repeats)
    full = cold_and_replayed(lambda: model.run(encoded)[1].time_us, repeats)
    timing = cold_and_replayed(lambda: model.run(encoded, timing_only=True)[1].time_us, repeats)
    rows = [Row(f"MiniLM, one sentence ({encoded.length} tokens), in-process", t_np, *full),
            Row("MiniLM, one sentence, timing only", t_np, *timing)]
    session = _ort_session(_minilm_model(model))
    if session is not None:
        t_ort = best_of(lambda: session.run(None, feeds), repeats)
        rows.append(Row("MiniLM, one sentence, against onnxruntime (1 thread)", t_ort, *full))
    return rows


def _minilm_model(model):
    from ixl.models.minilm import GRAPH
    from ixl.models.weights import fill_weights, weight_map
    return fill_weights(GRAPH, model.folder / weight_map(GRAPH)["file"])


def _ort_session(model):
    """An onnxruntime session of `model` on one thread, or None without onnxruntime."""
    try:
        import onnxruntime as ort
    except ImportError:
        print("(onnxruntime is not installed: pip install -e '.[ort]' adds its rows)")
        return None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


# ---------------------------------------------------------------- SmolLM2 decode

PROMPT = "The capital of France is"


def smollm2_rows(repeats: int, tokens: int = 9) -> list[Row]:
    """A decode step: a token of a `tokens`-token greedy generation, the prefill left out
    (the generation's time less a 1-token generation's, over the steps between)."""
    from ixl.models.smollm2 import GRAPH, SmolLM2
    from ixl.models.weights import fill_weights
    model = SmolLM2()

    def step_s() -> float:
        t = time.perf_counter()
        model.generate(PROMPT, 1)
        one = time.perf_counter() - t
        t = time.perf_counter()
        gen = model.generate(PROMPT, tokens)
        return (time.perf_counter() - t - one) / (len(gen.tokens) - 1), gen

    os.environ["IXL_REPLAY"] = "1"
    _, gen = step_s()                           # traced
    replayed = min(step_s()[0] for _ in range(repeats))
    assert step_s()[1].tokens == gen.tokens
    tpot = gen.tpot_us
    session = _ort_session(fill_weights(GRAPH, model.gguf))
    if session is None:
        return [Row(f"SmolLM2-135M float32, a decode step ({tokens}-token generation)", None,
                    None, replayed, tpot)]
    names = [i.name for i in session.get_inputs()]
    ids = model.encode(PROMPT)
    feeds = {names[0]: np.array([[gen.tokens[0]]], np.int64),
             names[1]: np.array([[len(ids)]], np.int64)}
    for inp in session.get_inputs()[2:]:
        feeds[inp.name] = np.zeros([gen.capacity if isinstance(d, str) else d
                                    for d in inp.shape], np.float32)
    t_ort = best_of(lambda: session.run(None, feeds), repeats)
    return [Row(f"SmolLM2-135M float32, a decode step ({tokens}-token generation), against "
                f"onnxruntime (1 thread); cold not measured (minutes)", t_ort, None, replayed,
                tpot)]


# ---------------------------------------------------------------- the tools

def tool_rows() -> list[Row]:
    """`ixl verify --release` (every sample case, 2 workers) and `ixl calibrate`, each once,
    as a user runs them (a new process)."""
    rows = []
    for work, argv in (("ixl verify --release --workers 2 (every sample case)",
                        ["verify", "--release", "--workers", "2", "--json"]),
                       ("ixl calibrate", ["calibrate", "--json"])):
        t = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "ixl.cli", *argv], capture_output=True,
                              text=True)
        elapsed = time.perf_counter() - t
        if done.returncode != 0:
            raise RuntimeError(f"{work} failed ({done.returncode}): {done.stderr[-400:]}")
        rows.append(Row(work, None, None, elapsed, None))
    return rows


# ---------------------------------------------------------------- where the time goes

def where_time_goes(fn) -> list[tuple[str, float]]:
    """cProfile sees only its own thread, so this one run simulates the cores on one thread."""
    os.environ["IXL_THREADS"] = "1"
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    del os.environ["IXL_THREADS"]
    by_module: dict[str, float] = defaultdict(float)
    for (path, _line, func), (_cc, _nc, tottime, _ct, _callers) in pstats.Stats(prof).stats.items():
        if "ixl" in path:
            key = "ixl/" + path.split("/ixl/")[-1]
        elif path == "~":
            key = f"builtin: {func}"
        else:
            key = path.rsplit("/", 1)[-1]
        by_module[key] += tottime
    total = sum(by_module.values())
    return [(k, v / total) for k, v in sorted(by_module.items(), key=lambda kv: -kv[1])[:12]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true",
                    help="smaller shapes, no SmolLM2 and no tools (a smoke run)")
    ap.add_argument("--profile", action="store_true", help="also profile one LayerNorm")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = 1024 if args.quick else 4096
    mm = 256 if args.quick else 1024
    dev = ixl.device("910B1", debug=False)
    rows = []
    for dtype in (F16, F32):
        a, b = (rng.standard_normal(n * n, dtype=F32).astype(dtype) for _ in range(2))
        rows.append(op_row(dev, f"Add {n * n // 2**20}M {np.dtype(dtype).name}", "Add", [a, b],
                           np_add, args.repeats))
    for dtype in (F16, F32):
        x = rng.standard_normal((n, n), dtype=F32).astype(dtype)
        g, b = np.ones(n, dtype), np.zeros(n, dtype)
        rows.append(op_row(dev, f"LayerNorm {n}x{n} {np.dtype(dtype).name}", "LayerNormalization",
                           [x, g, b], np_layer_norm, args.repeats))
    x = rng.standard_normal((n, n), dtype=F32)
    rows.append(op_row(dev, f"Softmax {n}x{n} float32", "Softmax", [x], np_softmax, args.repeats))
    a, b = (rng.standard_normal((mm, mm), dtype=F32).astype(F16) for _ in range(2))
    rows.append(op_row(dev, f"MatMul {mm}^3 float16 (Cube; numpy in float32)", "MatMul", [a, b],
                       np_matmul, min(args.repeats, 3)))
    rows += minilm_rows(min(args.repeats, 3))
    if not args.quick:
        rows += smollm2_rows(min(args.repeats, 3))
        rows += tool_rows()
    print(f"ixl release mode vs the plain implementation, best of {args.repeats} (MatMul and "
          f"the models: best of {min(args.repeats, 3)}; the tools: once), one process, "
          f"{os.cpu_count()} host cores")
    print("| work | reference (numpy; onnxruntime where named) | ixl cold | ratio | "
          "ixl replayed | ratio | modeled on the 910B1 |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(row.line())
    if args.profile:
        x = rng.standard_normal((n, n), dtype=F32)
        tensors = [dev.tensor(a) for a in (x, np.ones(n, F32), np.zeros(n, F32))]
        print("where a LayerNorm's simulation spends its time (one host thread, share):")
        for key, share in where_time_goes(lambda: dev.run("LayerNormalization", *tensors)):
            print(f"  {100 * share:5.1f}%  {key}")


if __name__ == "__main__":
    main()
