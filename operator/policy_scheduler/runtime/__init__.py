"""The framework's runtime, after kube-scheduler's framework/runtime and the algorithm half of its
schedule_one.go: a compiled policy's plugins run at each extension point
(:mod:`.framework`), one decision (:mod:`.schedule_one`), the preemption what-if
(:mod:`.preemption`), what a decision reports (:mod:`.decision`) and the explanation of one
pod (:mod:`.explanation`). Above the plugins, below the policy compiler and the loop.
"""
