"""CEL as Kubernetes evaluates it: device selectors (DRA) and the CRD's validation rules.

`DeviceSelectors` evaluates a DeviceClass's or a claim's selectors on ResourceSlice devices, with
results cached per (expression, device key); `CelError` carries kube's message. The libraries
Kubernetes adds to CEL are in `library.py`, the compiled program and its cost limit in
`program.py`.
"""

from policy_scheduler.model.cel.program import CelError, Program, compile_expression
from policy_scheduler.model.cel.selectors import DeviceSelectors, device_variable

__all__ = ["CelError", "DeviceSelectors", "Program", "compile_expression", "device_variable"]
