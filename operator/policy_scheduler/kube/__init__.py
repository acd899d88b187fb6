"""All API I/O of the operator: the client (JSON over HTTP/1.1 on the event loop), the informers
that list and watch nodes and pods, the scheduling loop's ports over the API (binds, events, pod
conditions, policy status, object writes), leader election, and :class:`~.scheduler.KubeScheduler`,
which wires them to the loop. Nothing below this layer waits for the network."""
