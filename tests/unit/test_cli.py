import json
import subprocess
import sys

import pytest

from ixl.cli import main, parse_shape


def _ixl(*args):
    return subprocess.run([sys.executable, "-m", "ixl.cli", *args], capture_output=True, text=True)


def test_run_json_contract(capsys):
    assert main(["run", "Add", "--shape", "1000,33", "--dtype", "float16", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    for key in ("op", "shapes", "dtype", "chip", "status", "path", "max_abs_err", "max_rel_err"):
        assert key in obj
    assert obj["status"] == "pass" and obj["path"] == "native" and obj["chip"] == "910B1"


def test_list_json_contract(capsys):
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    add = next(r for r in rows if r["op"] == "Add")
    assert add["tier"] == "S" and add["path"] == "native" and "float16" in add["dtypes"]


@pytest.mark.parametrize("args, text", [
    (["run", "Addd", "--shape", "4"], "unknown op 'Addd' (did you mean Add"),
    (["run", "Add", "--shape", "4,x"], "shape '4,x' does not parse"),
    (["run", "Add", "--shape", "4", "--dtype", "int8"], "Add does not support int8"),
    (["run", "Add", "--shape", "4", "--chip", "910C"], "known chips: 910B1, 910B2"),
    (["run", "Add", "--shape", "3,4", "--shape", "5"], "do not broadcast"),
])
def test_bad_input_is_one_clear_line_and_nonzero(args, text):
    r = _ixl(*args)
    assert r.returncode == 2
    assert text in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_verify_one_op_in_debug_mode(capsys):
    assert main(["verify", "--op", "Relu", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["dtype"] for r in rows} == {"float16", "bfloat16", "float32"}
    assert all(r["status"] == "pass" for r in rows)


def test_env_check_passes(capsys):
    assert main(["env", "--check"]) == 0
    assert "runtime (nixl)" in capsys.readouterr().out


def test_explain_finds_a_symptom(capsys):
    assert main(["explain", "ub", "overflow"]) == 0
    assert "tile = UB" in capsys.readouterr().out


def test_parse_shape():
    assert parse_shape("8192,8192") == (8192, 8192)
    assert parse_shape("scalar") == ()
    assert parse_shape("4x5") == (4, 5)


def test_verify_json_carries_array_attributes(capsys):
    assert main(["verify", "--op", "Constant", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["status"] == "pass" for r in rows)
