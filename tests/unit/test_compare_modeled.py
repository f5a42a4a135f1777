"""tools/compare_modeled.py: the before/after check of modeled times finds a changed time, a
changed status and a case one report lacks, and passes identical reports."""

import importlib.util
import json
from pathlib import Path

TOOL = Path(__file__).parents[2] / "tools" / "compare_modeled.py"
spec = importlib.util.spec_from_file_location("compare_modeled", TOOL)
compare_modeled = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_modeled)


def _row(op, us, status="pass", shapes=((4,),)):
    return {"op": op, "case": "c", "shapes": [list(s) for s in shapes], "dtype": "float16",
            "chip": "910B1", "attrs": {}, "status": status, "modeled_us": us}


def test_identical_reports_pass_and_any_difference_is_named(tmp_path, monkeypatch, capsys):
    before = [_row("Add", 1.5), _row("Relu", 2.0), _row("Exp", 3.0)]
    after = [_row("Add", 1.5), _row("Relu", 2.0000001), _row("Exp", 3.0, "fail"),
             _row("Add", 1.5, shapes=((8,),))]
    paths = []
    for name, rows in (("a.json", before), ("b.json", after)):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(rows))
    monkeypatch.setattr("sys.argv", ["compare_modeled.py", str(paths[0]), str(paths[0])])
    assert compare_modeled.main() == 0
    monkeypatch.setattr("sys.argv", ["compare_modeled.py", *map(str, paths)])
    assert compare_modeled.main() == 1
    out = capsys.readouterr().out
    assert "2.0 -> pass 2.0000001" in out and "pass 3.0 -> fail 3.0" in out
    assert "after only" in out and "3 differ" in out
