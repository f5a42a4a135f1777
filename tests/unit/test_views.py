import json

import numpy as np

from ixl.cli import main


def test_a_view_shares_memory_and_outlives_its_base(dev):
    x = dev.tensor(np.arange(12, dtype=np.float32))
    y = dev.run("Unsqueeze", x, dev.tensor(np.array([0], np.int64)))
    assert dev.last_profile.path == "view" and dev.last_profile.time_us == 0
    assert y.addr == x.addr and y.shape == (1, 12)
    x.free()                                    # the block stays while the view lives
    np.testing.assert_array_equal(y.numpy(), np.arange(12).reshape(1, 12))
    y.free()
    assert dev.allocator.stats.live_bytes == 0


def test_view_ops_are_listed_as_views(capsys):
    assert main(["list", "--json"]) == 0
    paths = {r["op"]: r["path"] for r in json.loads(capsys.readouterr().out)}
    views = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")
    assert {paths[op] for op in views} == {"view"}
