import os
import tempfile

import pytest

import ixl


@pytest.fixture
def dev():
    d = ixl.device("910B1", debug=True)
    yield d
    d.close()


# Tests never read or write the user's tuning cache.
os.environ["IXL_TUNING_CACHE"] = os.path.join(tempfile.mkdtemp(prefix="ixl-tests-"), "tuning.json")
