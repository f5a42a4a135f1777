"""Simulator speed: the same work on the simulated chip (release mode) and in plain numpy, timed
side by side in this one process, best of N, reported as ratios. The chip runs each launch
twice over: cold (IXL_REPLAY=0: the kernel's Python runs every time) and replayed (the launch
traced once, then run from its trace: ascend/replay.py); both give the same modeled time.

The numpy side is the plain implementation of the same op (half inputs computed in float32 and
rounded once, as the kernels do); MiniLM's is a numpy forward of the same model written here
(onnxruntime is not a dependency). Wall-clock time on a shared machine is noisy: compare the
ratios, and rerun on a quiet machine before reading much into one figure. Then a profile of one
simulated LayerNormalization shows where the simulator spends its time.

    python benchmarks/sim_speed.py [--repeats R] [--quick] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import math
import os
import pstats
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
    numpy_s: float
    cold_s: float
    replay_s: float
    modeled_us: float

    def line(self) -> str:
        return (f"| {self.work} | {self.numpy_s * 1e3:.1f} ms | {self.cold_s * 1e3:.0f} ms | "
                f"{self.cold_s / self.numpy_s:.1f}x | {self.replay_s * 1e3:.0f} ms | "
                f"{self.replay_s / self.numpy_s:.1f}x | {self.modeled_us:.1f} us |")


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
    return [Row(f"MiniLM, one sentence ({encoded.length} tokens), in-process", t_np, *full),
            Row("MiniLM, one sentence, timing only", t_np, *timing)]


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
    ap.add_argument("--quick", action="store_true", help="smaller shapes (a smoke run)")
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
    print(f"ixl release mode vs plain numpy, best of {args.repeats} (MatMul and MiniLM: best of "
          f"{min(args.repeats, 3)}), one process, {os.cpu_count()} host cores")
    print("| work | numpy | ixl cold | ratio | ixl replayed | ratio | modeled on the 910B1 |")
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
