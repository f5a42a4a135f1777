"""The executor: the same outcomes in this process, in a process pool and on Ray; a results
file that survives a killed sweep; failures kept with their error; a dying worker contained."""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

from ixl.cli import main
from ixl.executor import (
    ERROR,
    FAILED,
    OK,
    InProcess,
    Observer,
    Outcome,
    ProcessPool,
    RayCluster,
    Sweep,
    execute,
    run_sweep,
)
from ixl.executor.results import ResultsFile
from ixl.executor.task import failure
from ixl.hixl import ArgSpec, BadInput
from ixl.nixl import device
from ixl.profile import timing_run
from ixl.profile.timing_task import TimingCase
from ixl.verify.sweep import verify_sweep
from tests.helpers import CLI_ENTRY


@dataclass(frozen=True)
class Square:
    """A task that passes for even n, fails its check for odd n, and raises for n == 3."""

    n: int

    @property
    def id(self):
        return f"square {self.n}"

    def run(self):
        if self.n == 3:
            raise ValueError("three is\nrefused")
        return self.n % 2 == 0, {"square": self.n * self.n}


@dataclass(frozen=True)
class KillsItsWorker:
    """A task whose worker process dies under it (as one killed for memory would)."""

    @property
    def id(self):
        return "kills its worker"

    def run(self):
        os._exit(9)


def small_sweep() -> Sweep:
    """Sample cases (a kernel, the shim, an If whose branches do not pickle, an array
    attribute), tuning configurations (one refused), and tasks that fail and raise."""
    add = [ArgSpec((4096, 4096), "float16")] * 2
    timing = [TimingCase("910B1", "Add", tuple(add), (), (("buffer_num", b),))
              for b in (1, 2, 64)]
    cases = verify_sweep(["If", "Constant", "Neg"], "910B1", True, 0).tasks
    return Sweep("small", {}, [*cases, *timing, *(Square(n) for n in range(5))])


def table(report):
    return [(o.id, o.status, o.result, o.error) for o in report.outcomes]


@pytest.fixture(scope="module")
def in_process():
    return run_sweep(small_sweep(), InProcess())


def test_in_process_outcomes_keep_their_errors_and_order(in_process):
    by_id = in_process.by_id
    assert [o.id for o in in_process.outcomes] == [t.id for t in small_sweep().tasks]
    assert by_id["square 2"].status == OK and by_id["square 2"].result == {"square": 4}
    assert by_id["square 1"].status == FAILED
    assert by_id["square 3"].status == ERROR
    assert by_id["square 3"].error == {"type": "ValueError", "message": "three is refused"}
    refused = by_id['Add [4096, 4096]:float16 [4096, 4096]:float16 {} {"buffer_num": 64}']
    assert refused.status == ERROR and refused.error["type"] == "InvalidTuningConfig"
    assert "buffer_num must be from 1 to 8" in refused.error["message"]
    branch = next(o for o in in_process.outcomes if o.id.startswith("If/"))
    assert branch.ok and branch.result["row"]["attrs"]["then_branch"] == "<FunctionBranch>"
    assert in_process.count(OK) == len(in_process.outcomes) - 3 and not in_process.all_ok


def test_a_timing_task_is_the_timing_run_at_that_config():
    specs = [ArgSpec((4096, 4096), "float16")] * 2
    dev = device("910B1", timing_only=True)
    try:
        expected = timing_run(dev, "Add", specs, config={"buffer_num": 1}).time_us
    finally:
        dev.close()
    outcome = execute(TimingCase("910B1", "Add", tuple(specs), (), (("buffer_num", 1),)))
    assert outcome.ok and outcome.result["time_us"] == expected
    assert outcome.result["path"] == "native" and outcome.result["block_dim"] > 0


def test_the_process_pool_gives_the_in_process_results(in_process):
    pooled = run_sweep(small_sweep(), ProcessPool(2))
    assert table(pooled) == table(in_process)
    assert pooled.backend == "process pool, 2 workers"


@pytest.mark.slow
def test_ray_gives_the_in_process_results(in_process):
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]' "
                                            "(CI installs it)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = run_sweep(small_sweep(), RayCluster("auto"))
        assert table(on_ray) == table(in_process)
        assert on_ray.backend == "Ray (local or running), 2 CPUs"
        assert ray.is_initialized()               # a cluster it did not start is left running
    finally:
        ray.shutdown()


def test_without_ray_the_option_names_the_install_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)           # as if not installed
    with pytest.raises(BadInput, match=r"--ray needs Ray, which is not installed: pip install "
                                       r"'ixl\[ray\]'"):
        RayCluster("auto")


def test_a_worker_that_dies_loses_only_its_own_task():
    tasks = [Square(n) for n in (0, 2, 4)] + [KillsItsWorker()] + [Square(n) for n in (6, 8)]
    report = run_sweep(Sweep("crash", {}, tasks), ProcessPool(2))
    lost = report.by_id["kills its worker"]
    assert lost.status == ERROR and lost.error["type"] == "WorkerLost"
    assert "died twice" in lost.error["message"]
    assert [o.status for o in report.outcomes if o.id != lost.id] == [OK] * 5


# ---------------------------------------------------------------- the results file

def test_results_are_appended_and_a_resume_runs_only_what_is_missing(tmp_path):
    path = str(tmp_path / "r.jsonl")
    sweep = Sweep("squares", {"n": 5}, [Square(n) for n in range(5)])
    first = run_sweep(Sweep("squares", {"n": 5}, sweep.tasks[:3]), InProcess(), path)
    assert first.resumed == 0
    with pytest.raises(BadInput, match="another sweep"):     # 3 tasks is not the 5-task plan
        run_sweep(sweep, InProcess(), path, resume=True)
    ran = []
    report = run_sweep(Sweep("squares", {"n": 5}, sweep.tasks[:3]), InProcess(), path,
                       resume=True, observer=Recorder(ran))
    assert report.resumed == 3 and ran == [] and len(report.outcomes) == 3
    lines = [json.loads(line) for line in open(path)]
    assert lines[0]["kind"] == "squares"
    assert [(r["id"], r["status"]) for r in lines[1:]] == \
        [("square 0", OK), ("square 1", FAILED), ("square 2", OK)]
    rest = run_sweep(sweep, InProcess(), str(tmp_path / "all.jsonl"))
    assert rest.by_id["square 3"].error == {"type": "ValueError", "message": "three is refused"}


class Recorder(Observer):
    """Lists the tasks run now."""

    def __init__(self, into):
        self.into = into

    def finished(self, task, outcome):
        self.into.append(task.id)


def test_a_torn_last_line_is_dropped_and_the_task_runs_again(tmp_path):
    path = tmp_path / "r.jsonl"
    sweep = Sweep("squares", {}, [Square(n) for n in (0, 2)])
    run_sweep(sweep, InProcess(), str(path))
    whole = path.read_text()
    path.write_text(whole[:-10])                     # the writer died inside the last record
    ran = []
    report = run_sweep(sweep, InProcess(), str(path), resume=True, observer=Recorder(ran))
    assert ran == ["square 2"] and report.all_ok
    assert path.read_text() == whole


@pytest.mark.parametrize("content, text", [
    ("", None),                                       # empty: a fresh sweep
    ("hello\n", "is not an ixl results file"),
    ('{"ixl_sweep": 1, "kind": "squares", "params": {}, "tasks": 1, "plan": "x"}\n',
     "holds another sweep"),
])
def test_resume_checks_the_file_is_this_sweeps(tmp_path, content, text):
    path = tmp_path / "r.jsonl"
    path.write_text(content)
    sweep = Sweep("squares", {}, [Square(0)])
    if text is None:
        assert run_sweep(sweep, InProcess(), str(path), resume=True).all_ok
    else:
        with pytest.raises(BadInput, match=text):
            run_sweep(sweep, InProcess(), str(path), resume=True)
        assert path.read_text() == content               # left as it was


def test_a_file_being_written_by_another_sweep_is_refused(tmp_path):
    path = str(tmp_path / "r.jsonl")
    open_file = ResultsFile(path, Sweep("squares", {}, [Square(0)]).header(), resume=False)
    try:
        with pytest.raises(BadInput, match="another sweep is writing this file"):
            ResultsFile(path, Sweep("squares", {}, [Square(0)]).header(), resume=True)
    finally:
        open_file.close()


@pytest.mark.parametrize("argv, text", [
    (["verify", "--op", "Neg", "--workers", "2", "--ray", "auto"], "choose one"),
    (["verify", "--op", "Neg", "--resume"], "--resume needs --results FILE"),
    (["verify", "--op", "Neg", "--workers", "0"], "argument --workers: '0' is not a positive"),
    (["verify", "--op", "Neg", "--ray", "nowhere"], "--ray nowhere: give auto, HOST:PORT"),
    (["verify", "--op", "Neg", "--results", "{tmp}"], "is a directory"),
    (["model", "minilm", "--text", "a", "--workers", "2"], "--workers: it goes with --file"),
])
def test_bad_sweep_options_are_one_line(argv, text, tmp_path, capsys):
    if "--ray" in argv and argv[-1] == "nowhere":
        pytest.importorskip("ray", reason="the address is checked once Ray is imported")
    rc = main([a.format(tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("ixl: error: ") and err.count("\n") == 1
    assert text in err


def test_verify_refuses_to_overwrite_a_results_file(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    path.write_text("something\n")
    assert main(["verify", "--op", "Neg", "--results", str(path)]) == 2
    assert "already holds a sweep's results: add --resume" in capsys.readouterr().err
    assert path.read_text() == "something\n"


def test_verify_json_is_the_same_on_every_backend_and_from_the_file(tmp_path, capsys):
    args = ["verify", "--op", "If", "--json"]
    assert main([*args, "--workers", "1"]) == 0
    alone = capsys.readouterr().out
    assert main([*args, "--workers", "2", "--results", str(tmp_path / "r.jsonl")]) == 0
    assert capsys.readouterr().out == alone
    assert main([*args, "--results", str(tmp_path / "r.jsonl"), "--resume"]) == 0
    assert capsys.readouterr().out == alone
    rows = json.loads(alone)
    assert len(rows) == 15 and rows[0]["attrs"]["then_branch"] == "<FunctionBranch>"


# ---------------------------------------------------------------- real processes


def _records(path):
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines(keepends=True)[1:]
            if line.endswith("\n")]


def _start(argv, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", CLI_ENTRY, *argv], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stderr.readline() == "ready\n"
    return proc


def _wait_for_records(path, n, proc, seconds=120):
    deadline = time.monotonic() + seconds
    while len(_records(path)) < n:
        assert proc.poll() is None, "the sweep ended before it could be interrupted"
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _alive(group):
    """Processes of the process group that still run (zombies awaiting their reaper aside)."""
    rows = subprocess.run(["ps", "-eo", "pgid=,stat="], capture_output=True,
                          text=True).stdout.split("\n")
    return [r for r in rows if r.split()[:1] == [str(group)] and not r.split()[1].startswith("Z")]


def _children_gone(group, seconds=30):
    """Every process of the group has ended (pool workers included)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(group):
            return True
        time.sleep(0.2)
    os.killpg(group, signal.SIGKILL)
    return False


VERIFY = ["verify", "--op", "Softmax", "--workers", "2", "--results", "r.jsonl", "--json"]


@pytest.mark.slow
def test_a_killed_sweep_resumed_loses_no_result_and_repeats_no_task(tmp_path):
    path = tmp_path / "r.jsonl"
    proc = _start(VERIFY, tmp_path)
    _wait_for_records(path, 3, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert _children_gone(proc.pid), "pool workers outlived the killed command"
    before = _records(path)
    plan = [t.id for t in verify_sweep(["Softmax"], "910B1", True, 0).tasks]
    assert 3 <= len(before) < len(plan)

    done = subprocess.run([sys.executable, "-m", "ixl.cli", *VERIFY, "--resume"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    after = _records(path)
    assert after[:len(before)] == before                  # every finished result kept as is
    ids = [json.loads(line)["id"] for line in after]
    assert sorted(ids) == sorted(plan)                    # each task once: none repeated
    rows = json.loads(done.stdout)
    assert [(r["op"], r["dtype"]) for r in rows] == [(t.split("/")[0], t.split("/")[2])
                                                     for t in plan]
    assert all(r["status"] == "pass" for r in rows)


def test_ctrl_c_stops_the_workers_and_leaves_the_file_valid(tmp_path):
    path = tmp_path / "r.jsonl"
    proc = _start(VERIFY, tmp_path)
    _wait_for_records(path, 1, proc)
    os.killpg(proc.pid, signal.SIGINT)                   # as a terminal's Ctrl-C does
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and out == "" and err == "ixl: interrupted\n"
    assert _children_gone(proc.pid)
    lines = path.read_text().splitlines(keepends=True)
    assert all(line.endswith("\n") and json.loads(line) for line in lines)


@pytest.mark.slow
def test_verify_on_a_ray_cluster_it_starts_prints_what_one_process_prints(capsys):
    """`--ray auto` with no cluster running starts a local one (IXL_* variables passed to its
    workers) and shuts it down at the end."""
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[ray]' "
                                            "(CI installs it)")
    args = ["verify", "--op", "Constant", "--json"]
    assert main([*args, "--workers", "1"]) == 0
    alone = capsys.readouterr().out
    assert main([*args, "--ray", "auto"]) == 0
    assert capsys.readouterr().out == alone
    assert not ray.is_initialized()


def test_a_case_that_raises_is_an_error_row_and_the_command_fails(monkeypatch, capsys):
    from ixl.ascend import ChipError
    from ixl.verify.sweep import VerifyCase
    run = VerifyCase.run

    def broken(self):
        if self.case == 0 and self.dtype == "float16":
            raise ChipError("aicore memory out of bound: core 0 reads GM [0x0, 0x40)")
        return run(self)
    monkeypatch.setattr(VerifyCase, "run", broken)
    assert main(["verify", "--op", "Neg", "--workers", "1"]) == 1
    out = capsys.readouterr().out
    assert "ERROR Neg/0/float16: ChipError: aicore memory out of bound: core 0 reads GM " \
           "[0x0, 0x40)" in out
    assert "20 passed, 1 failed" in out
    assert main(["verify", "--op", "Neg", "--workers", "1", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    error = rows[0].pop("error")
    assert rows[0] == {"op": "Neg", "case": rows[1]["case"], "dtype": "float16",
                       "chip": "910B1", "status": "error", "error_type": "ChipError"}
    assert error.startswith("aicore memory out of bound: core 0 reads GM [0x0, 0x40) (see: ixl "
                            "explain")
    assert [r["status"] for r in rows[1:]] == ["pass"] * 20


def test_an_outcome_reads_its_result_or_its_error():
    ran = Outcome("a", OK, result={"x": 1})
    raised = failure("b", "ValueError", "bad width")
    assert ran.found == {"x": 1} and ran.error_type == "" and ran.error_message == ""
    assert (raised.error_type, raised.error_message) == ("ValueError", "bad width")
    with pytest.raises(TypeError, match="task b has no result: ValueError: bad width"):
        raised.found
