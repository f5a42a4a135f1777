"""The 950PR (arch 3510) as the facts give it [S3510][VARCH]: vector kernels run on its spec;
its Cube, which takes other layouts than the A2's, is refused rather than modeled wrongly."""

import pytest

import ixl
from ixl.ascend import get_chip
from ixl.ascend import lang as asc
from ixl.ascend.errors import IllegalInstruction

from .cube_kernels import Harness


def test_the_950_spec_follows_the_facts():
    chip = get_chip("950")
    assert chip.name == "950PR" and chip.arch == "dav-3510"
    assert (chip.aic_cores, chip.aiv_cores, chip.clock_mhz) == (32, 64, 1650)
    assert chip.ub_bytes == 253952 and chip.l0c_bytes == 256 * 1024
    assert (chip.ub_bank_groups, chip.ub_banks_per_group, chip.ub_bank_bytes) == (8, 2, 16384)
    assert chip.bank_stretch == 128 * 1024


def test_a_vector_kernel_runs_on_the_950_with_its_own_cores():
    dev = ixl.device("950", timing_only=True)
    a = dev.empty((2048, 2048), "float16")
    dev.run("Add", a, a).free()
    assert dev.last_profile.launch.block_num == 64
    a.free()
    dev.close()


def test_a_cube_kernel_is_refused_on_the_950():
    h = Harness("950PR")
    with pytest.raises(IllegalInstruction, match="950PR: its Cube takes other layouts"):
        h.launch(lambda core: None, kind=asc.KernelType.CUBE)
