"""Always on, the chip's own fault: every operand of every vector instruction starts on a
32-byte UB boundary; an instruction with one unaligned operand names it and its address."""

import numpy as np
import pytest

from ixl.ascend import lang as asc
from ixl.ascend.errors import IllegalInstruction
from tests.helpers import ub_tensor

F16, F32 = np.float16, np.float32


def _operands(core):
    """Fresh aligned float16/float32/uint8 tensors, 32 bytes of slack each for an offset."""
    return {"h": [ub_tensor(core, F16, 528, 1) for _ in range(3)],
            "f": [ub_tensor(core, F32, 264, 1) for _ in range(3)],
            "m": ub_tensor(core, np.uint8, 64, 255)}


# name, operand roles, the call given (operands by role)
FORMS = [
    ("add", ("dst", "src0", "src1"), lambda o: asc.add(o["dst"], o["src0"], o["src1"], 256)),
    ("add", ("dst", "src0", "src1"),
     lambda o: asc.add(o["dst"], o["src0"], o["src1"], 128, 2, asc.BinaryRepeatParams())),
    ("adds", ("dst", "src"), lambda o: asc.adds(o["dst"], o["src"], 1.0, 256)),
    ("exp", ("dst", "src"),
     lambda o: asc.exp(o["dst"], o["src"], 64, 2, asc.UnaryRepeatParams())),
    ("duplicate", ("dst",), lambda o: asc.duplicate(o["dst"], 2.0, 256)),
    ("duplicate", ("dst",), lambda o: asc.duplicate(o["dst"], 2.0, 128, 2)),
    ("whole_reduce_sum", ("dst", "src"),
     lambda o: asc.whole_reduce_sum(o["dst"], o["src"], 128, 2)),
    ("block_reduce_max", ("dst", "src"),
     lambda o: asc.block_reduce_max(o["dst"], o["src"], 128, 2)),
    ("compare", ("dst", "src0", "src1"),
     lambda o: asc.compare(o["dst"], o["src0"], o["src1"], asc.CmpMode.LT, 256)),
    ("compare_scalar", ("dst", "src"),
     lambda o: asc.compare_scalar(o["dst"], o["src"], 0.5, asc.CmpMode.GE, 256)),
    ("select", ("dst", "mask", "src0", "src1"),
     lambda o: asc.select(o["dst"], o["mask"], o["src0"], o["src1"], 256)),
    ("brcb", ("dst", "src"), lambda o: asc.brcb(o["dst"], o["src"], 2)),
]


def _bind(core, roles, name, shift=None):
    t = _operands(core)
    halves = iter(t["h"])
    bound = {r: (t["m"] if r == "mask" or (name.startswith("compare") and r == "dst")
                 else next(halves)) for r in roles}
    if shift:
        bound[shift] = bound[shift][16 if bound[shift].itemsize == 1 else 8]   # 16 bytes in
    return bound


@pytest.mark.parametrize("name, roles, call", FORMS,
                         ids=[f"{f[0]}-{i}" for i, f in enumerate(FORMS)])
def test_each_operand_of_each_form_must_be_32_byte_aligned(core, name, roles, call):
    call(_bind(core, roles, name))                    # the clean twin runs
    for role in roles:
        bound = _bind(core, roles, name, shift=role)
        addr = bound[role].offset
        with pytest.raises(IllegalInstruction) as info:
            call(bound)
        assert str(info.value).startswith(
            f"Illegal instruction, which is usually caused by unaligned UUB addresses: core 0 "
            f"{name} {role} UB address {addr:#x} is not 32-byte aligned")


def test_cast_checks_its_operands_too(core):
    src, dst = ub_tensor(core, F16, 256, 1), ub_tensor(core, F32, 264, 0)
    asc.cast(dst, src, asc.RoundMode.CAST_NONE, 128)
    with pytest.raises(IllegalInstruction, match=r"cast dst UB address 0x[0-9a-f]+ is not 32-byte"):
        asc.cast(dst[2], src, asc.RoundMode.CAST_NONE, 128)
