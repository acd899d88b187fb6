# The two commands a newcomer needs: `make demo` and `make test`. Everything else serves them.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
CLUSTER_DIR := .local/cluster

.PHONY: demo test lint typecheck unit e2e controlplane older-apiservers cluster cluster-down clean bench bench-quick bench-gang bench-shapes chaos upstream-e2e

# The virtualenv is rebuilt whenever pyproject.toml changes.
$(BIN)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

controlplane:
	hack/controlplane/build > /dev/null

# The kube-apiservers of the older releases the operator supports (tests/e2e/test_servers.py).
older-apiservers:
	hack/controlplane/build --older > /dev/null

lint: $(BIN)/.installed
	$(BIN)/ruff check operator tests bench hack/upstream-e2e
	$(BIN)/ruff format --check operator tests bench hack/upstream-e2e
	$(BIN)/lint-imports

typecheck: $(BIN)/.installed
	$(BIN)/mypy

unit: $(BIN)/.installed
	$(BIN)/pytest tests/unit

e2e: $(BIN)/.installed controlplane older-apiservers
	$(BIN)/pytest tests/e2e

test: lint typecheck unit e2e

# etcd, kube-apiserver, kube-controller-manager and kwok (simulated kubelets); WITH_SCHEDULER=1 also
# starts kube-scheduler.
cluster: controlplane
	hack/controlplane/up --dir $(CLUSTER_DIR) $(if $(WITH_SCHEDULER),--with-scheduler)

cluster-down:
	hack/controlplane/down --dir $(CLUSTER_DIR)

demo: $(BIN)/.installed controlplane
	hack/demo --dir $(CLUSTER_DIR)

# policy-scheduler, kube-scheduler and the two raw bind limits on identical fresh control planes,
# every phase (burst, steady, storage, preemption, anti-affinity, spread, preferred-affinity,
# the ten other affinity and spreading shapes of SHAPES, the misc and volume shapes of MISC,
# parked), then the DRA steady state (500 nodes, on control planes with kube-controller-manager)
# and the gang phases (groups of 8 and of 64 on 1,000 nodes, with the gate GenericWorkload on);
# results in bench/results/ (see bench/README.md). bench-quick finishes in under five minutes plus
# its DRA runs at 100 nodes (its counts: a fifth of --pods for storage and the shaped phases,
# --pods arriving while a fifth of them are parked); its gang phases would take it past five
# minutes (two more control planes of 1,000 nodes): bench-gang runs them alone (two to three minutes).
# So would the misc and volume shapes (MISC: seven more phases per decider and node count, with
# their set-up of PVs, CSINodes, nodes of their own and deletions) and the ten shapes of SHAPES
# (another two to three minutes), which bench-quick leaves out too: bench-shapes runs every shaped
# phase after a burst of 300 pods, the deciders only, at 100 and 500 nodes (three to five minutes).

MISC := secrets in-tree-pvs csi-pvs daemonset finalizers gated mixed-churn
SHAPES := anti-affinity-ns pod-affinity preferred-anti-affinity node-affinity affinity-ns \
	preferred-anti-affinity-ns preferred-spread node-inclusion preferred-pod-affinity preferred-affinity-ns

bench: $(BIN)/.installed controlplane
	$(BIN)/python bench/bench_scheduling.py

bench-quick: $(BIN)/.installed controlplane
	$(BIN)/python bench/bench_scheduling.py --nodes 100 500 --pods 300 --steady-rate 50 --steady-seconds 5 \
	    --preemption-pods 10 --dra-nodes 100 --gang-nodes 0 \
	    $(foreach phase,$(MISC) $(SHAPES),--$(phase)-pods 0)

bench-shapes: $(BIN)/.installed controlplane
	$(BIN)/python bench/bench_scheduling.py --nodes 100 500 --pods 300 --steady-seconds 0 --storage-pods 0 \
	    --preemption-pods 0 --parked-pods 0 --unschedulable-pods 0 --dra-nodes 0 --gang-nodes 0 \
	    --schedulers policy-scheduler kube-scheduler $(foreach phase,$(MISC),--$(phase)-pods 0)

bench-gang: $(BIN)/.installed controlplane
	$(BIN)/python bench/bench_scheduling.py --nodes --dra-nodes 0 --schedulers policy-scheduler kube-scheduler

# Faults injected while the operator works (etcd and kube-apiserver restarts, a frozen leader, a
# policy deleted while the watches are down), then parked pods under node churn against
# kube-scheduler; tables on stdout, bench/results/chaos.json (see bench/README.md). Both run even
# if the first fails; the target fails if either did.
chaos: $(BIN)/.installed controlplane
	status=0; \
	$(BIN)/python bench/chaos.py || status=1; \
	$(BIN)/python bench/bench_parked.py --node-churn || status=1; \
	exit $$status

# Kubernetes' own [sig-scheduling] e2e tests, against kube-scheduler and then against
# policy-scheduler serving default-scheduler, each on a fresh cluster; a table of both results,
# failing if ours fails a test kube-scheduler passes (see docs/upstream-e2e.md).
upstream-e2e: $(BIN)/.installed controlplane
	$(BIN)/python hack/upstream-e2e

clean: cluster-down
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .import_linter_cache
