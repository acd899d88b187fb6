"""The scheduling framework: the loop that turns pending pods into bindings, after
kube-scheduler's ``scheduleOne``, and the state it keeps. No module here talks to an API server.

- :mod:`.scheduler`: the :class:`~.scheduler.Scheduler` and its loop, with its extension points
  (pre-enqueue, filter, post-filter, score, reserve, permit, pre-bind, bind, post-bind), made of
  :mod:`.core` (its state, queueing, cluster events), :mod:`.eventhandlers` (the watches' feeds),
  :mod:`.schedule_one` (the scheduling and binding cycles) and :mod:`.preemption` (acting on a
  preemption);
- :mod:`.ports`: the narrow protocols through which it binds, tells, writes statuses and
  objects, counts metrics and reads the clock; :mod:`policy_scheduler.kube` implements them over
  the API, :mod:`policy_scheduler.simulate` and the unit tests in memory;
- :mod:`.cache`: the live cluster state with assumed pods, and the snapshot a cycle decides on;
- :mod:`.queue`: pending pods (active, backoff, unschedulable, gated);
- :mod:`.waiting`: which deletions cannot help a preemptor waiting for its victims;
- :mod:`.policies`: which SchedulingPolicy serves which scheduler name, and its conditions;
- :mod:`.status`: each policy's status, kept in memory and written coalesced.
"""
