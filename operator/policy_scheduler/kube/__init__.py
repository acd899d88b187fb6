"""All API I/O of the operator: the client and its thread pool, binding, events and pod
conditions, the policy status writer, and the scheduling loop that drives them. The decision path
below this layer never waits for the network; everything here keeps it that way."""
