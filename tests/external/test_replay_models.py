"""Replay and its timing memo (ascend/replay.py, ascend/memo.py) change nothing a model's run
says: MiniLM (two sentences, float32 and float16) and SmolLM2 (float32) run with replay on and
off give the same output bytes and the same modeled facts, launch by launch, per core and per
pipe, while most launches with replay on take their timing from a memo."""

import pytest

from ixl.models import MiniLM
from ixl.models.smollm2 import SmolLM2

from ..sim.test_replay import launch_facts
from .test_minilm import SENTENCES
from .test_smollm2 import PROMPTS, needs_weights

pytestmark = pytest.mark.slow


def facts(records) -> list:
    return [launch_facts(r) for g in records for r in g.runs]


def memoized(records) -> int:
    return sum(r.launch is not None and r.launch.timing == "memo"
               for g in records for r in g.runs)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_minilm_is_the_same_with_replay_on_and_off(monkeypatch, dtype):
    runs = {}
    for replay in ("0", "1"):
        monkeypatch.setenv("IXL_REPLAY", replay)
        model = MiniLM("910B1", dtype)
        out = [model.run(model.encode(text)) for text in SENTENCES[:2] * 2]
        runs[replay] = ([h.tobytes() for h, _ in out], [g for _, g in out])
    (off_bytes, off_records), (on_bytes, on_records) = runs["0"], runs["1"]
    assert on_bytes == off_bytes
    assert facts(on_records) == facts(off_records)
    assert memoized(on_records) > len(facts(on_records)) // 4


@needs_weights
def test_smollm2_is_the_same_with_replay_on_and_off(monkeypatch):
    model = SmolLM2()
    prompt = PROMPTS[0]
    runs = {}
    for replay in ("0", "1"):
        monkeypatch.setenv("IXL_REPLAY", replay)
        runs[replay] = model.generate(prompt["prompt"], 3, chat=prompt["chat"],
                                      keep_logits=True)
    off, on = runs["0"], runs["1"]
    assert on.tokens == off.tokens == prompt["new_ids"][:3]
    assert [r.tobytes() for r in on.logits] == [r.tobytes() for r in off.logits]
    assert facts(on.records) == facts(off.records)
    assert memoized(on.records) > 0 and memoized(off.records) == 0
    assert on.tpot_us == off.tpot_us
