"""The tuning configuration: one typed config, validated once at launch, its dict form still
accepted (dev.run's config=, the tuning cache's JSON); bad fields named with what is allowed."""

import json

import numpy as np
import pytest

import ixl
from ixl.ascend import get_chip
from ixl.nixl import tuning_cache
from ixl.nixl.tuning import InvalidTuningConfig, TuningConfig, TuningSpace


def test_the_dict_form_converts_once_and_round_trips():
    config = TuningConfig.of({"buffer_num": 4, "tile_div": np.int64(2)}, get_chip("910B1"))
    assert config == TuningConfig(buffer_num=4, tile_div=2)
    assert config.to_dict() == {"buffer_num": 4, "tile_div": 2}
    assert TuningConfig.of(config) is config
    assert TuningConfig.of(None) == TuningConfig() and TuningConfig().buffers == 2


@pytest.mark.parametrize("value, message", [
    ({"bufer_num": 2}, "unknown tuning field 'bufer_num'; the fields are buffer_num, tile, "
                       "tile_div, block_dim, accumulate"),
    ({"buffer_num": 0}, "buffer_num must be a positive integer, got 0"),
    ({"buffer_num": "2"}, "buffer_num must be a positive integer, got '2'"),
    ({"tile": 2.0}, "tile must be a positive integer, got 2.0"),
    ({"block_dim": True}, "block_dim must be a positive integer, got True"),
    ({"tile": 1024, "tile_div": 2}, "give tile or tile_div, not both"),
    ({"accumulate": "float64"}, "accumulate must be one of float32, float16, got 'float64'"),
    ({"buffer_num": 9}, "buffer_num must be from 1 to 8 (the event ids of one queue position "
                        "on 910B1), got 9"),
    ([("buffer_num", 2)], "a tuning config is a dict or a TuningConfig, got list"),
])
def test_a_bad_config_names_the_field_and_what_is_allowed(value, message):
    with pytest.raises(InvalidTuningConfig) as e:
        TuningConfig.of(value, get_chip("910B1"))
    assert message in str(e.value) and "ixl explain" in str(e.value)


def test_launch_validates_and_records_the_config(dev):
    x = dev.tensor(np.ones((8, 64), np.float16))
    with pytest.raises(InvalidTuningConfig, match="bufer_num"):
        dev.run("Relu", x, config={"bufer_num": 2})
    with pytest.raises(InvalidTuningConfig, match="elementwise kernels take the tuning fields "
                                                  "buffer_num, tile, tile_div, block_dim, "
                                                  "bank_gaps; not accumulate"):
        dev.run("Relu", x, config={"accumulate": "float16"})
    with pytest.raises(InvalidTuningConfig, match="axis kernels take the tuning fields "
                                                  "buffer_num, tile_div, block_dim, accumulate; "
                                                  "not tile"):
        dev.run("Softmax", x, config={"tile": 1024})
    y = dev.run("Relu", x, config={"buffer_num": 1, "block_dim": 4})
    assert dev.last_profile.config == {"buffer_num": 1, "block_dim": 4}
    assert dev.last_profile.tiling.config == TuningConfig(buffer_num=1, block_dim=4)
    y.free()
    y = dev.run("Relu", x, config=TuningConfig(buffer_num=4))
    assert dev.last_profile.tiling.config.buffers == 4
    for t in (x, y):
        t.free()


def test_a_kernel_declares_its_tuning_space_as_data():
    entry = ixl.nixl.REGISTRY.native("Softmax")
    assert entry.tuning_space == TuningSpace(buffer_num=(1, 2, 4))
    points = entry.tuning_space.points(get_chip("910B1"))
    assert len(points) == 3 * 3 * 2
    assert points[0] == TuningConfig(buffer_num=1, tile_div=1, block_dim=48)


def test_the_tuning_cache_refuses_what_it_cannot_read(tmp_path, monkeypatch):
    path = tmp_path / "tuning.json"
    monkeypatch.setenv("IXL_TUNING_CACHE", str(path))
    assert tuning_cache.lookup("910B1", "Add", [(4,)], "float16") is None
    saved = tuning_cache.store("910B1", "Add", [(4,)], "float16", {"buffer_num": 4})
    assert json.loads(saved.read_text()) == {"910B1|Add|4|float16": {"buffer_num": 4}}
    assert tuning_cache.lookup("910B1", "Add", [(4,)], "float16") == TuningConfig(buffer_num=4)
    path.write_text('{"910B1|Add|4|float16": {"buffer_nom": 4}}')
    with pytest.raises(InvalidTuningConfig, match=r"tuning cache .*IXL_TUNING_CACHE.*entry "
                                                  r"'910B1\|Add\|4\|float16': unknown tuning"):
        tuning_cache.check()
    path.write_text("{not json")
    with pytest.raises(InvalidTuningConfig, match="is not JSON"):
        tuning_cache.lookup("910B1", "Add", [(4,)], "float16")
