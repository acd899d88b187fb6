"""Pure data the decision path works on: quantities, read-only views over Kubernetes objects, and
the per-node accounting that plugins read. Nothing here performs I/O."""
