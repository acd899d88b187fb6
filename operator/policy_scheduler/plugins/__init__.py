"""Scheduling plugins: one module per plugin, each with its ``NAME`` and a ``new_filter`` and/or
``new_scorer`` factory. Where a plugin shares a kube-scheduler plugin's name it computes the same
verdicts and scores; :mod:`policy_scheduler.plugins.registry` maps names (and the legacy Policy API
aliases) to factories."""
