"""UB bank conflicts (ascend/ubbanks.py): operands that collide in a bank group or a bank cost
the extra passes the guide describes [BANK][BANK2]; a placement that avoids them does not."""

import numpy as np
import pytest

import ixl
from ixl.ascend import AICore, Mode, get_chip
from ixl.ascend import lang as asc
from ixl.profile import launch_metrics

F16 = np.float16
KB = 1024
N = 128 * 64          # 64 repeats of 128 float16 lanes


def _add_cycles(src1_at: int, dst_at: int = 128 * KB, chip: str = "910B1",
                params: asc.BinaryRepeatParams | None = None, repeats: int | None = None):
    """One Add of src0 (at 0) and src1 on a fresh core: (its cycles, the core's
    [bank-group, bank] conflict cycles)."""
    core = AICore(get_chip(chip), 0, Mode(timing_only=True))
    core.begin_block(0, 1)
    pos = asc.TPosition.VECCALC
    x = asc.local_tensor(pos, F16, 0, N)
    y = asc.local_tensor(pos, F16, src1_at, N)
    z = asc.local_tensor(pos, F16, dst_at, N)
    if params is None:
        asc.add(z, x, y, N)
    else:
        asc.add(z, x, y, 128, repeats, params)
    core.end_block(check=False)
    return core.timeline.end, list(core.bank_conflicts)


def test_two_sources_in_one_bank_group_cost_a_pass_per_repeat():
    same, conflicts = _add_cycles(64 * KB)           # src1 64 KB on: the same bank groups
    skewed, none = _add_cycles(64 * KB + 256)        # 8 rows on: the other 8 bank groups
    assert conflicts == [64, 0] and none == [0, 0]
    assert same == pytest.approx(skewed + 64)


def test_a_read_and_a_write_in_one_bank_serialize():
    _, conflicts = _add_cycles(64 * KB + 256, dst_at=0)      # in place on src0
    assert conflicts == [0, 64]


def test_a_block_stride_of_16_takes_8_passes_and_of_8_takes_4():
    """[BANK2]: blocks i, j of one repeat collide when (i - j) * blkStride = 0 (mod 16).
    src1 is one row in bank group 1 (block and repeat strides 0), src0 from group 0 on."""
    # stride 1: src0's repeats 0 and 2 cover groups 0-7 and meet src1's row there: 2 passes
    for stride, extra in ((16, 4 * 7), (8, 4 * 3), (1, 2)):
        p = asc.BinaryRepeatParams(dst_blk_stride=1, src0_blk_stride=stride, src1_blk_stride=0,
                                   dst_rep_stride=8, src0_rep_stride=8 * stride,
                                   src1_rep_stride=0)
        _, conflicts = _add_cycles(64 * KB + 32, params=p, repeats=4)
        assert conflicts[0] == extra, stride


def test_a_chip_whose_banks_are_not_published_models_none():
    _, conflicts = _add_cycles(64 * KB, chip="310P3")
    assert conflicts == [0, 0]


def test_the_profile_reports_the_conflict_ratio_in_msprof_words():
    dev = ixl.device("910B1", timing_only=True)
    a = dev.empty((2048, 2048), "float16")
    dev.run("Add", a, a).free()
    v = launch_metrics(dev.last_profile.launch).values
    for key in ("aiv_vec_bankgroup_cflt_ratio", "aiv_vec_bank_cflt_ratio",
                "aiv_vec_total_cflt_ratio"):
        assert 0.0 <= v[key] <= 1.0
    assert v["aiv_vec_total_cflt_ratio"] == pytest.approx(
        v["aiv_vec_bankgroup_cflt_ratio"] + v["aiv_vec_bank_cflt_ratio"], abs=2e-4)
    a.free()
    dev.close()
