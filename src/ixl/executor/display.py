"""What a sweep shows: a progress bar while it runs (done, failed, rate, time left; on a
terminal only, on stderr) and a summary table when it ends."""

from __future__ import annotations

from collections.abc import Callable

from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.progress import Task as RichTask
from rich.table import Table
from rich.text import Text

from ..console import err, out
from .sweep import Observer, Report
from .task import ERROR, FAILED, OK, Outcome, Task


class RateColumn(ProgressColumn):
    """Tasks per second over the last half minute (rich's own estimate)."""

    def render(self, task: RichTask) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-/s" if speed is None else f"{speed:.1f}/s", style="progress.data.speed")


class ProgressBar(Observer):
    """A transient bar on stderr when stderr is a terminal; nothing otherwise (piped output
    and logs stay clean)."""

    def __init__(self, title: str, label: Callable[[Task], str] = lambda task: task.id) -> None:
        self.title, self.label = title, label
        self.bar: Progress | None = None

    def __enter__(self) -> ProgressBar:
        if err.is_terminal:
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                MofNCompleteColumn(),
                                TextColumn("[red]{task.fields[failed]} failed"), RateColumn(),
                                TextColumn("eta"), TimeRemainingColumn(),
                                console=err, transient=True)
            self.bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def start(self, total: int, done: int, failed: int) -> None:
        if self.bar is not None:
            self.task = self.bar.add_task(self.title, total=total, completed=done, failed=failed)
            self.failed = failed

    def finished(self, task: Task, outcome: Outcome) -> None:
        if self.bar is not None:
            self.failed += outcome.status != OK
            self.bar.update(self.task, advance=1, failed=self.failed,
                            description=f"{self.title} {self.label(task)[:40]}")


def summary_table(report: Report) -> Table:
    table = Table(title="sweep summary")
    for col in ("tasks", "from the results file", "run now", "ok", "failed", "errors",
                "wall time", "rate", "where"):
        table.add_column(col, justify="left" if col == "where" else "right")
    run_now = len(report.outcomes) - report.resumed
    missing = report.total - len(report.outcomes)
    rate = f"{run_now / report.seconds:.1f}/s" if report.seconds > 0 and run_now else "-"
    table.add_row(str(report.total) + (f" ({missing} not run)" if missing else ""),
                  str(report.resumed), str(run_now), str(report.count(OK)),
                  str(report.count(FAILED)), str(report.count(ERROR)),
                  f"{report.seconds:.1f} s", rate, report.backend)
    return table


def print_summary(report: Report, quiet: tuple[str, ...] = ()) -> None:
    """The summary table, each task that raised (its error type and message; errors of the
    types in `quiet`, expected ones such as a tuning configuration that does not fit, only
    counted), and where the results file is."""
    out.print(summary_table(report))
    expected = [o for o in report.errors if o.error_type in quiet]
    for outcome in report.errors:
        if outcome.error_type not in quiet:
            out.print(f"[red]ERROR[/] {escape(outcome.id)}: {escape(outcome.error_line())}")
    if expected:
        out.print(f"{len(expected)} error(s) of the expected kind "
                  f"{', '.join(sorted({o.error_type for o in expected}))} (not listed)")
    if report.results:
        out.print(f"results: {report.results} (--resume continues the sweep from it)")
