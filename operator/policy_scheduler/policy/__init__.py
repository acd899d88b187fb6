"""SchedulingPolicy objects: read from files, defaulted and validated against the CRD's own schema,
then compiled into the pipeline that schedules their pods.

- :mod:`~policy_scheduler.policy.schema`: the schema of ``crds/schedulingpolicy.yaml``, applied as
  the API server applies it (defaults, structural validation, the CEL rules' meaning);
- :mod:`~policy_scheduler.policy.compiler`: schema and plugin checks, every error of a policy at
  once, and the compiled policy;
- :mod:`~policy_scheduler.policy.load`: SchedulingPolicy objects out of YAML files.
"""
