"""The framework's contracts, after kube-scheduler's pkg/scheduler/framework: the extension points a
plugin implements (:mod:`.interface`), the state a cycle keeps for them (:mod:`.cycle_state`), the
cluster events they register for (:mod:`.events`), what a cycle hands them (:mod:`.types`) and how
their arguments are checked (:mod:`.args`). Below the plugins: it imports none of them.
"""
