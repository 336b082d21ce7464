"""pytest-xdist's scope schedulers (``--dist loadgroup``, ``loadscope``, ``loadfile``), made safe for runs in which
workers die.

In pytest-xdist 3.8 a worker that dies while running a test breaks these schedulers four ways (the first three are
its issues #1189, #1323 and #1362, open): the dead worker's whole groups go back to the queue, the test that killed
it included, so that test kills every replacement until the restart limit ends the run; the groups' finished tests
go back too, and a group with nothing left to run makes its next worker wait forever; and the dead worker's
collection is kept, so when two workers are replaced at once the scheduler hands work to one that has not collected
yet and stops the run with an INTERNALERROR (KeyError). A fourth: once the queue is empty the other workers have
been told to shut down, and the replacement that takes the dead worker's groups back is given one of them; a worker
never runs the only test it holds (see ``_reschedule``), so a group of one test there hangs the run. The subclass
built here puts back only the unfinished tests other than the one that killed the worker, gives no work to a worker
still collecting, gives a worker groups until it holds two tests or the queue is empty, and shuts down a worker left
with one test and an empty queue. (The dead worker's collection stays registered: the count of collections is also
how the scheduler knows, at the end, that every test has run.)
"""

from __future__ import annotations


class _ForgetsDeadWorkers:
    """Mixed in before one of xdist's LoadScopeScheduling classes; overrides only what a dead worker touches."""

    def remove_node(self, node):
        workload = self.assigned_work.pop(node)
        unfinished = [(scope, nodeid) for scope, unit in workload.items() for nodeid, done in unit.items()
                      if not done]
        if not unfinished:
            return None
        crashitem = unfinished[0][1]  # a worker runs its tests in order: the first unfinished one was running
        for scope, nodeid in unfinished[1:]:
            self.workqueue.setdefault(scope, {})[nodeid] = False
        for other in self.assigned_work:
            self._reschedule(other)
        return crashitem

    def _reschedule(self, node) -> None:
        if node not in self.registered_collections:
            return  # still collecting: it gets work when its collection is in
        super()._reschedule(node)
        # xdist hands out one unit per call and calls again only when a test completes. A worker runs a test only
        # once it holds the next one (pytest tears down with the next item in hand) or is told to shut down, so a
        # replacement given a dead worker's one-test unit would wait forever beside a queue still holding units.
        while not node.shutting_down and self.workqueue and self._pending_of(self.assigned_work[node]) < 2:
            self._assign_work_unit(node)
        if not self.workqueue and not node.shutting_down and self._pending_of(self.assigned_work[node]) < 2:
            node.shutdown()  # nothing more will come: shutting down is what makes it run the one test it holds


def crash_safe_scheduler(config, log):
    """The scheduler for ``config``'s ``--dist`` mode with the fixes above, or None to leave xdist's choice."""
    from xdist.scheduler import LoadFileScheduling, LoadGroupScheduling, LoadScopeScheduling

    base = {"loadgroup": LoadGroupScheduling, "loadscope": LoadScopeScheduling,
            "loadfile": LoadFileScheduling}.get(config.getvalue("dist"))
    if base is None:
        return None
    return type(f"CrashSafe{base.__name__}", (_ForgetsDeadWorkers, base), {})(config, log)
