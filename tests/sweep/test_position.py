"""ApplyRotaryPosEmb over its kernel's boundaries: half rows at block edges (each half is a UB
row of its own) and at a repeat's lanes (a longer half goes in pieces), heads at one
instruction's repeats (more heads take a second instruction), tokens over the cores and past
one tile, no key heads."""

from hypothesis import assume, given
from hypothesis import strategies as st

from ixl.hixl import SampleCase

from .space import CHIP, check, dim, dtype_of, fits, lanes, near, sweep_settings


@given(data=st.data())
@sweep_settings()
def test_rotary_shapes(debug_dev, data):
    dtype = dtype_of(data, "ApplyRotaryPosEmb")
    block, _ = lanes(dtype)
    float32_lanes = CHIP.lanes(4)            # the kernel computes in float32
    half = data.draw(dim(near(1, block, 2 * block, float32_lanes, 2 * float32_lanes), 300),
                     label="half")
    q_heads = data.draw(dim(near(1, 9, CHIP.max_repeat), 300), label="query heads")
    k_heads = data.draw(dim([0] + near(1, 3, CHIP.max_repeat), 300), label="key heads")
    tokens = tuple(data.draw(dim(near(1, CHIP.aiv_cores, 2 * CHIP.aiv_cores), 200),
                             label="tokens") for _ in range(data.draw(st.integers(1, 2))))
    q, k = tokens + (q_heads, 2 * half), tokens + (k_heads, 2 * half)
    table = tokens + (1, 2 * half)
    assume(fits(q, k))
    check(debug_dev, "ApplyRotaryPosEmb", SampleCase("sweep", (q, k, table, table)), dtype)
