import pytest

from ixl.ascend import AICore, Mode, get_chip


@pytest.fixture
def core():
    """One debug-mode core with a block running: instructions can be issued directly."""
    c = AICore(get_chip("910B1"), 0, Mode(debug=True))
    c.begin_block(0, 1)
    yield c
    c.end_block(check=False)
