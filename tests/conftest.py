import gc
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


def pytest_addoption(parser):
    parser.addoption("--long", action="store_true",
                     help="also run the tests marked long: model checks at full length (more "
                          "tokens, more prompts) that do not fit the suite's 15-minute budget; "
                          "the shape sweep at its wide size")


def pytest_configure(config):
    """--long widens the shape sweep (tests/sweep) to its wide size, unless
    IXL_SWEEP_EXAMPLES says how many examples outright."""
    if config.getoption("--long") and not os.environ.get("IXL_SWEEP_EXAMPLES"):
        from tests.sweep.space import WIDE_EXAMPLES
        os.environ["IXL_SWEEP_EXAMPLES"] = str(WIDE_EXAMPLES)


def pytest_collection_modifyitems(config, items):
    if config.getoption("--long"):
        return
    skip = pytest.mark.skip(reason="long: runs with --long (outside the suite's time budget)")
    for item in items:
        if item.get_closest_marker("long") is not None:
            item.add_marker(skip)


def pytest_collection_finish(session):
    """The collected tests live to the end of the session: out of the cyclic collector's way
    (gc.freeze), so that its full collections walk what the tests allocate, not the hundreds of
    thousands of objects collection made (a worker spent about a minute in full collections)."""
    gc.freeze()
