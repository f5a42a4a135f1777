import pytest

import ixl


@pytest.fixture(scope="module")
def debug_dev():
    d = ixl.device("910B1", debug=True)
    yield d
    assert d.close() == []
