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


def _add_on_one_core(bank_gaps: bool):
    """Add of 1024 x 1024 float16 on one core, single buffered (moves and compute in turn, so
    the vector unit's cycles show): (modeled us, metrics, diagnosis)."""
    dev = ixl.device("910B1", timing_only=True)
    a = dev.empty((1024, 1024), "float16")
    dev.run("Add", a, a, config={"block_dim": 1, "buffer_num": 1,
                                 "bank_gaps": bank_gaps}).free()
    launch = dev.last_profile.launch
    m = launch_metrics(launch)
    a.free()
    dev.close()
    return launch.time_us, m.values, m.diagnosis


def test_the_elementwise_template_places_its_buffers_apart_from_bank_conflicts():
    """kernels/ub_place.py: the second input's queue half a bank-group cycle on, the output a
    bank stretch away; back to back (as consecutive InitBuffer calls place them) the two
    inputs share bank groups in every repeat, and the diagnosis says so."""
    placed_us, placed, placed_diag = _add_on_one_core(True)
    packed_us, packed, packed_diag = _add_on_one_core(False)
    assert placed["aiv_vec_total_cflt_ratio"] == 0.0 and "bank conflicts" not in placed_diag
    assert packed["aiv_vec_bankgroup_cflt_ratio"] > 0.3 and "UB bank conflicts" in packed_diag
    assert placed_us < packed_us


def test_a_placement_with_no_room_for_gaps_has_none():
    from ixl.kernels.ub_place import Want, gaps, staggered
    chip = get_chip("910B1")
    wants = [Want(16 * KB), Want(16 * KB, against=0), Want(16 * KB, against=1, apart=0)]
    assert gaps(wants, chip, 192 * KB) == (0, 256, 64 * KB - 32 * KB - 256)
    assert gaps(wants, chip, 48 * KB + 512) == (0, 256, 256)     # no room for the stretch
    assert gaps(wants, chip, 48 * KB) is None                     # nor for the half cycle
    assert gaps(wants, get_chip("310P3"), 48 * KB) == (0, 0, 0)   # banks not published
    assert staggered(8192, 2, chip) * 2 % 512 == 256


@pytest.mark.parametrize("to_y", [True, False])
@pytest.mark.parametrize("scratch", [True, False])
def test_the_normalisations_finish_writes_no_tile_it_reads(scratch, to_y):
    """axis_ub.finish_chain: each step of a finish (y from the statistics, then * scale, then
    + bias) writes another tile than the one it reads, the last into y when no conversion
    follows; only with no scratch (a chip without published banks) does it work in place."""
    from ixl.kernels.axis_ub import finish_chain
    from ixl.kernels.norm import LayerNorm, LogSoftmax, RMSNorm, Softmax
    for op in (Softmax(), LogSoftmax(), LayerNorm(), RMSNorm()):
        for params in range(op.params + 1):
            chain = finish_chain(op, params, scratch, to_y)
            reads = (op.finish_reads, *chain[:-1])
            assert len(chain) == 1 + params
            assert (chain[-1] == "y") == to_y
            if scratch:
                assert all(w != r for w, r in zip(chain, reads)), (op, params, chain)
            elif params:
                assert chain[1] == reads[1]                       # in place


def _norm_conflicts(op: str, *extra) -> dict:
    dev = ixl.device("910B1", timing_only=True)
    ts = [dev.empty(s, "float16") for s in [(256, 4096), *extra]]
    outs = dev.run(op, *ts)
    v = launch_metrics(dev.last_profile.launch).values
    for t in (*ts, *(outs if isinstance(outs, tuple) else (outs,))):
        t.free()
    dev.close()
    return v


def test_the_normalisations_place_their_parameters_apart_from_the_tile_they_scale():
    """y * scale + bias reads each parameter vector half a bank-group cycle from the tile its
    step reads, and writes a third tile (kernels/axis_ub.py). Before, the steps worked in
    place and read the parameters from the tile's own bank groups: LayerNormalization lost
    17.8% of its vector cycles to conflicts, RMSNormalization 28.6%. What is left is a
    statistic broadcast from one block (stride 0), which meets a row's blocks in half the
    repeats wherever it lies."""
    ln = _norm_conflicts("LayerNormalization", (4096,), (4096,))
    rms = _norm_conflicts("RMSNormalization", (4096,))
    assert ln["aiv_vec_bank_cflt_ratio"] < 0.01
    assert ln["aiv_vec_total_cflt_ratio"] < 0.08
    assert rms["aiv_vec_total_cflt_ratio"] < 0.11


def _core():
    core = AICore(get_chip("910B1"), 0, Mode(timing_only=True))
    core.begin_block(0, 1)
    return core


def test_transdata_to_5hd_with_its_16_rows_in_one_bank_group_takes_16_passes():
    """Each address of TransDataTo5HD's lists is one 32-byte row a repeat: 16 source rows 512
    bytes apart all lie in one bank group (15 more passes a repeat); an odd pitch of 17 blocks
    spreads them over the 16 groups, as kernels/transpose.py lays its tiles out."""
    found = {}
    for pitch in (512, 544):
        core = _core()
        pos = asc.TPosition.VECCALC
        src = [asc.local_tensor(pos, F16, i * pitch, 16) for i in range(16)]
        dst = [asc.local_tensor(pos, F16, 64 * KB + 32 + i * 544, 16) for i in range(16)]
        asc.trans_data_to_5hd(dst, src, asc.TransDataTo5HDParams(repeat_times=4,
                                                                  dst_rep_stride=1,
                                                                  src_rep_stride=1))
        core.end_block(check=False)
        found[pitch] = list(core.bank_conflicts)
    assert found[512] == [4 * 15, 0] and found[544] == [0, 0]


def test_reductions_and_broadcasts_pay_for_strided_blocks_in_one_bank_group():
    """A whole-repeat reduce reading blocks 16 apart, and a Brcb writing them, take 8 passes a
    repeat: 7 more each."""
    core = _core()
    pos = asc.TPosition.VECCALC
    x = asc.local_tensor(pos, np.float32, 0, 64 * 16 * 2)
    out = asc.local_tensor(pos, np.float32, 96 * KB, 64)
    asc.whole_reduce_sum(out, x, 64, 2, src_blk_stride=16, src_rep_stride=1)
    assert list(core.bank_conflicts) == [2 * 7, 0]
    asc.brcb(x, out, 2, dst_blk_stride=16, dst_rep_stride=1)
    assert list(core.bank_conflicts) == [4 * 7, 0]
    core.end_block(check=False)


def test_compare_and_select_pay_for_sources_in_one_bank_group():
    core = _core()
    pos = asc.TPosition.VECCALC
    a = asc.local_tensor(pos, F16, 0, 128)
    b = asc.local_tensor(pos, F16, 64 * KB, 128)       # the same bank groups as a
    mask = asc.local_tensor(pos, np.uint8, 128 * KB, 32)
    asc.compare(mask, a, b, asc.CmpMode.LT, 128)
    assert list(core.bank_conflicts) == [1, 0]
    c = asc.local_tensor(pos, F16, 64 * KB + 256, 128)  # the other 8 groups
    asc.select(c, mask, a, b, 128)
    assert core.bank_conflicts[0] == 2
    core.end_block(check=False)
