"""Sweeps beyond one process: tasks (picklable descriptions of one unit of work) run in this
process, in a pool of local processes or on a Ray cluster, their outcomes streamed into one
table and, as each finishes, into a results file that lets an interrupted sweep resume.

The executor knows no ops and no models: each kind of work defines its task next to the code
it runs (`verify.sweep.VerifyCase`, `onnx.node_cases.NodeCase`, `models.evaluate.EmbedText`,
`profile.timing_task.TimingCase`).
"""

from .backends import Backend, InProcess, ProcessPool, RayCluster, core_count
from .results import ResultsFile
from .sweep import Observer, Report, Sweep, run_sweep
from .task import ERROR, FAILED, OK, Outcome, Task, execute, jsonable, one_line, worker_local

__all__ = ["Backend", "InProcess", "ProcessPool", "RayCluster", "core_count", "ResultsFile",
           "Observer", "Report", "Sweep", "run_sweep", "ERROR", "FAILED", "OK", "Outcome",
           "Task", "execute", "jsonable", "one_line", "worker_local"]
