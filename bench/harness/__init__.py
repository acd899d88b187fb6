"""The harness that tests/e2e and the benchmarks of bench/ share.

- ``controlplane``: a local control plane (hack/controlplane: etcd, kube-apiserver, kube-scheduler)
  started and stopped in a state directory, its kubeconfigs and binaries, and free ports;
- ``kube``: the one Kubernetes API client, plain ``requests`` on a kubeconfig's token;
- ``processes``: the operator and kube-scheduler as child processes, and what they cost;
- ``objects``: Node, Pod and SchedulingPolicy builders;
- ``metrics``: a Prometheus exposition scraped and parsed (prometheus_client's parser);
- ``checks``: no node overcommitted, no pod told Scheduled twice;
- ``workload``: the benchmarks' namespace, nodes and pods, created in bulk;
- ``watches``: when each pod is first bound, and the writes to a collection, from watches;
- ``wait``: polling until something holds, within a time limit;
- ``e2e``: what the end-to-end tests add for pytest (kubectl, polling that fails the test).

It lives in bench/ so that ``python bench/SCRIPT.py`` finds it beside the script; pytest and mypy
have bench/ on their path.
"""
