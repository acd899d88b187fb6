"""The snapshot's per-node numbers as arrays, and blocks of nodes that read them together.

A decision looks at hundreds or thousands of nodes, and most of what it asks of each is numeric:
how much is allocatable and requested, how many pods run there, whether the node has taints. The
:class:`NodeTable` keeps those numbers in one array per quantity, entry ``i`` for the ``i``-th node
of the snapshot, updated as nodes and pods come and go (the ClusterState calls it), so
that plugins compute over a :class:`NodeBlock` of nodes with a few array operations instead of a
Python loop per node. The NodeInfo dicts stay the source of truth; the arrays equal them whenever
they are read: a node whose pods changed is only marked, and its pods' numbers (requested,
non-zero requested, pod and port counts) are written when the table is next read, so that a
what-if taking dozens of pods off a node and putting them back writes them once, not per pod.

Node labels are kept the same way for the label keys that plugins have asked about (topology
keys, mostly): per key, each node's value as a small integer code; and so are, once asked about,
whether each node lists an image, and each node's set of taints (nodes with the same taints get
the same code, so a plugin can judge each set once).

The snapshot's pod groups are counted per node the same way (:class:`NodeCounts`, by position),
so that pods per topology domain are summed with array operations (:meth:`NodeTable.per_domain`).

The arrays hold int64 while every value is at most :data:`EXACT_LIMIT` in magnitude, so that sums
of two amounts times 100 (what the resource scorers compute) cannot overflow. A column that gets a
larger value switches to Python integers (dtype object): slower, still exact.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import numpy.typing as npt

from policy_scheduler.model.quantity import CPU, MEMORY

if TYPE_CHECKING:
    from policy_scheduler.model.nodeinfo import NodeInfo
    from policy_scheduler.model.objects import NodeView

Array = npt.NDArray[Any]
"""A column or a computed array: int64 (object when exact integers need more), bool or float64."""
Indices = npt.NDArray[np.intp]

EXACT_LIMIT = 2**55
"""The largest magnitude a column keeps in int64: (2 * limit) * 100 still fits."""

_Column = tuple[str, str]
_ALLOCATABLE = "allocatable"
_REQUESTED = "requested"
_NONZERO_REQUESTED = "nonzero_requested"
_POD_COUNT: _Column = ("pods", "")
_PORT_COUNT: _Column = ("used_ports", "")
_UNSCHEDULABLE: _Column = ("unschedulable", "")
_NONZERO = (CPU, MEMORY)
"""The resources that NodeInfo.nonzero_requested tracks."""
NO_LABEL = -1
"""The code of a node that lacks the label (also the index of the last entry of a per-code
array, where such nodes go), or that lacks the image, or has no taints."""
_LABEL = "label"
_IMAGE = "image"
_TAINTS: _Column = ("taints", "")
_Coded = tuple[str, str]
"""(_LABEL, label key), (_IMAGE, image name) or _TAINTS."""


def _node_value(coded: _Coded, node: NodeView) -> Hashable | None:
    """The node's value of a label, "" when it lists an image, or its taints; None when it has
    no such label, does not list the image, or has no taints."""
    kind, name = coded
    if kind == _LABEL:
        return node.labels.get(name)
    if kind == _IMAGE:
        return "" if name in node.image_sizes else None
    return node.taints or None


class _CodeColumn:
    """One label key's value on every node (or whether it lists one image, or its taints), as
    codes: the same value has the same code."""

    __slots__ = ("codes", "values")

    def __init__(self, capacity: int) -> None:
        self.codes: Array = np.full(capacity, NO_LABEL, np.int64)
        self.values: dict[Hashable, int] = {}

    def set(self, position: int, value: Hashable | None) -> None:
        self.codes[position] = (
            NO_LABEL if value is None else self.values.setdefault(value, len(self.values))
        )


def plus(values: Array, amount: int) -> Array:
    """``values + amount``, in Python integers when ``amount`` is too large for int64 math."""
    if -EXACT_LIMIT <= amount <= EXACT_LIMIT:
        return values + amount
    return values.astype(object) + amount


class LabelMap:
    """Numbers for the values of one label, to look nodes up by: ``mapping[value]``, ``default``
    for a value not in ``mapping``, ``missing`` for a node without the label.

    Made once per cycle: a table translates the mapping for its own codes once (again only when
    nodes with new values of the label have come since). A map computed from a table's codes
    (:meth:`of_codes`) is already in that table's terms; other tables get its mapping."""

    __slots__ = ("_mapping", "_translated", "default", "key", "missing")

    def __init__(
        self, key: str, mapping: Mapping[str, int], default: int = 0, missing: int | None = None
    ) -> None:
        self.key = key
        self._mapping: Mapping[str, int] | None = mapping
        self.default = default
        self.missing = default if missing is None else missing
        self._translated: tuple[NodeTable, int, Array] | None = None

    @classmethod
    def of_codes(
        cls,
        table: NodeTable,
        key: str,
        results: Array,
        default: int = 0,
        missing: int | None = None,
    ) -> LabelMap:
        """The map whose result for each code of ``table``'s column of label ``key`` is
        ``results[code]`` (``results`` has one entry per code, and one more, ignored)."""
        made = cls(key, {}, default, missing)
        made._mapping = None
        translated = results.copy()
        translated[NO_LABEL] = made.missing
        made._translated = (table, len(results) - 1, translated)
        return made

    @property
    def mapping(self) -> Mapping[str, int]:
        if self._mapping is None:
            assert self._translated is not None
            table, known, results = self._translated
            codes = table._coded_column((_LABEL, self.key)).values
            self._mapping = {
                str(value): int(results[code])
                for value, code in codes.items()
                if code < known and results[code] != self.default
            }
        return self._mapping

    def results(self, table: NodeTable, column: _CodeColumn) -> Array:
        """The result for each code of ``table``'s column of the label, then for no label."""
        known = len(column.values)
        translated = self._translated
        if translated is not None and translated[0] is table and translated[1] == known:
            return translated[2]
        results = np.full(known + 1, self.default, np.int64)
        results[NO_LABEL] = self.missing
        for value, result in self.mapping.items():
            code = column.values.get(value)
            if code is not None:
                results[code] = result
        self._translated = (table, known, results)
        return results


class NodeTable:
    """Per-node numbers of a snapshot's nodes, one array entry per node in snapshot order."""

    def __init__(self, infos: Iterable[NodeInfo] = ()) -> None:
        self.infos: list[NodeInfo] = []
        self._positions: dict[NodeInfo, int] = {}
        self._columns: dict[_Column, Array] = {}
        self._coded: dict[_Coded, _CodeColumn] = {}
        # Nodes whose pods changed since their pods' numbers were last written.
        self._stale: set[NodeInfo] = set()
        self._capacity = 0
        for info in infos:
            self.append(info)

    def __len__(self) -> int:
        return len(self.infos)

    def position(self, info: NodeInfo) -> int:
        """Where ``info`` is in the snapshot's order."""
        return self._positions[info]

    def block(self, positions: Indices) -> NodeBlock:
        return NodeBlock(self, positions)

    def all(self) -> NodeBlock:
        """Every node, in snapshot order."""
        return NodeBlock(self, np.arange(len(self.infos)))

    def gather(self, column: _Column, positions: Indices) -> Array:
        """The column's values at ``positions``; a column never set is 0 everywhere."""
        if self._stale:
            self._write_stale()
        values = self._columns.get(column)
        if values is None:
            return np.zeros(len(positions), np.int64)
        return values[positions]

    def label_lookup(self, labels: LabelMap, positions: Indices) -> Array:
        """``labels`` applied to the nodes at ``positions``."""
        column = self._coded_column((_LABEL, labels.key))
        return labels.results(self, column)[column.codes[positions]]

    def lists_image(self, image: str, positions: Indices) -> npt.NDArray[np.bool_]:
        """Whether the nodes at ``positions`` list ``image`` in their status."""
        listed: npt.NDArray[np.bool_] = (
            self._coded_column((_IMAGE, image)).codes[positions] != NO_LABEL
        )
        return listed

    def taint_sets(self, positions: Indices) -> Array:
        """A code per node at ``positions``: equal for nodes with equal taints, -1 for none."""
        codes: Array = self._coded_column(_TAINTS).codes[positions]
        return codes

    def per_domain(
        self,
        key: str,
        counts: Iterable[NodeCounts],
        counted: Callable[[Indices], npt.NDArray[np.bool_]] | None = None,
        missing_as_empty: bool = False,
    ) -> Array | None:
        """The sum of ``counts`` over the nodes of each value of label ``key``: one entry per
        code of the label's column (and a last one, 0). Only the nodes that ``counted`` accepts
        (given positions, it marks them) count; None when no counted node has the label. With
        ``missing_as_empty``, the nodes without the label count as having the value "" (see
        :meth:`domain_codes`), and the result is never None."""
        codes, known = self.domain_codes(key) if missing_as_empty else self.label_codes(key)
        totals: Array = np.zeros(known + 1, np.int64)
        labelled = missing_as_empty
        for part in counts:
            positions, amounts = part.arrays()
            if counted is not None:
                kept = counted(positions)
                positions, amounts = positions[kept], amounts[kept]
            domains = codes[positions]
            np.add.at(totals, domains, amounts)
            labelled = labelled or bool((domains != NO_LABEL).any())
        if not missing_as_empty:
            totals[NO_LABEL] = 0
        return totals if labelled else None

    def label_codes(self, key: str) -> tuple[Array, int]:
        """Each node's code for its value of label ``key`` (-1 without the label), in snapshot
        order, and how many codes there are: the same value, the same code."""
        column = self._coded_column((_LABEL, key))
        return column.codes[: len(self.infos)], len(column.values)

    def domain_codes(self, key: str) -> tuple[Array, int]:
        """As :meth:`label_codes`, but a node without the label has the code of the value "",
        as Go's ``node.Labels[key]`` reads a missing label: that value's code when some node
        has (or had) it, else still -1, which indexes the last entry of a per-code array, one
        more domain."""
        codes, known = self.label_codes(key)
        empty = self._coded_column((_LABEL, key)).values.get("")
        if empty is not None:
            codes = np.where(codes == NO_LABEL, empty, codes)
        return codes, known

    def _coded_column(self, coded: _Coded) -> _CodeColumn:
        column = self._coded.get(coded)
        if column is None:
            # From now on this column is kept up to date with the nodes.
            column = self._coded[coded] = _CodeColumn(self._capacity)
            for position, info in enumerate(self.infos):
                column.set(position, _node_value(coded, info.node))
        return column

    # --- Updates: the ClusterState calls these on every change ------------------------

    def append(self, info: NodeInfo) -> None:
        """Add a node (with its pods) after the others."""
        position = len(self.infos)
        if position == self._capacity:
            self._grow()
        self.infos.append(info)
        self._positions[info] = position
        for values in self._columns.values():
            values[position] = 0
        self.node_changed(info)
        self._write_pods(info, position)

    def remove(self, info: NodeInfo) -> None:
        """Take a node out; the nodes after it move up one place."""
        self._stale.discard(info)
        position = self._positions.pop(info)
        end = len(self.infos)
        for values in self._all_arrays():
            values[position : end - 1] = values[position + 1 : end]
        del self.infos[position]
        for later in range(position, end - 1):
            self._positions[self.infos[later]] = later

    def node_changed(self, info: NodeInfo) -> None:
        """The Node object of ``info`` was set: its allocatable, taints and cordon."""
        position = self._positions[info]
        node = info.node
        for (kind, _), values in self._columns.items():
            if kind == _ALLOCATABLE:
                values[position] = 0
        for name, amount in node.allocatable.items():
            self._set((_ALLOCATABLE, name), position, amount)
        self._set(_UNSCHEDULABLE, position, int(node.unschedulable))
        for coded, column in self._coded.items():
            column.set(position, _node_value(coded, node))

    def pods_changed(self, info: NodeInfo) -> None:
        """Pods were added to or removed from ``info`` (a node of this table): its pods'
        numbers are written before the table is next read."""
        self._stale.add(info)

    def _write_stale(self) -> None:
        positions = self._positions
        for info in self._stale:
            self._write_pods(info, positions[info])
        self._stale.clear()

    def _write_pods(self, info: NodeInfo, position: int) -> None:
        """Write what ``info``'s pods add up to. Its ``requested`` keeps every resource its pods
        ever requested (at 0 once none does), so every column it has a number in is written."""
        for name, amount in info.requested.items():
            self._set((_REQUESTED, name), position, amount)
        for name in _NONZERO:
            self._set((_NONZERO_REQUESTED, name), position, info.nonzero_requested[name])
        self._set(_POD_COUNT, position, len(info.pods))
        self._set(_PORT_COUNT, position, len(info.used_ports))

    def _set(self, column: _Column, position: int, value: int) -> None:
        values = self._columns.get(column)
        if values is None:
            values = self._columns[column] = np.zeros(self._capacity, np.int64)
        if not -EXACT_LIMIT <= value <= EXACT_LIMIT and values.dtype != object:
            values = self._columns[column] = values.astype(object)
        values[position] = value

    def _all_arrays(self) -> Iterator[Array]:
        yield from self._columns.values()
        for column in self._coded.values():
            yield column.codes

    def _grow(self) -> None:
        # Doubling keeps appends amortized O(1) per column.
        self._capacity = max(16, 2 * self._capacity)
        for column, values in self._columns.items():
            self._columns[column] = _grown(values, self._capacity, 0)
        for coded in self._coded.values():
            coded.codes = _grown(coded.codes, self._capacity, NO_LABEL)


def _grown(values: Array, capacity: int, fill: int) -> Array:
    grown = np.full(capacity, fill, values.dtype)
    grown[: len(values)] = values
    return grown


class NodeCounts:
    """How many of some pods run on each node that has any: the nodes' positions in a table and
    the counts, as arrays, kept up to date one node at a time."""

    __slots__ = ("_counts", "_infos", "_positions", "_slots")

    def __init__(self) -> None:
        self._positions: Indices = np.zeros(4, np.intp)
        self._counts: Array = np.zeros(4, np.int64)
        self._infos: list[NodeInfo] = []
        self._slots: dict[NodeInfo, int] = {}

    @classmethod
    def of(cls, table: NodeTable, counts: Iterable[tuple[NodeInfo, int]]) -> NodeCounts:
        made = cls()
        for info, count in counts:
            made.set(info, table.position(info), count)
        return made

    def arrays(self) -> tuple[Indices, Array]:
        size = len(self._infos)
        return self._positions[:size], self._counts[:size]

    def set(self, info: NodeInfo, position: int, count: int) -> None:
        """``count`` such pods run on ``info`` now, at ``position`` in the table."""
        slot = self._slots.get(info)
        if slot is None:
            if not count:
                return
            slot = self._slots[info] = len(self._infos)
            self._infos.append(info)
            if slot == len(self._counts):
                self._positions = _grown(self._positions, 2 * slot, 0)
                self._counts = _grown(self._counts, 2 * slot, 0)
            self._positions[slot] = position
        elif not count:
            # The last node takes the place of the one that has none any more.
            last = self._infos.pop()
            del self._slots[info]
            if last is not info:
                self._infos[slot] = last
                self._slots[last] = slot
                self._positions[slot] = self._positions[len(self._infos)]
                self._counts[slot] = self._counts[len(self._infos)]
            return
        self._counts[slot] = count


class NodeBlock(Sequence["NodeInfo"]):
    """Some nodes of a snapshot, in the order a decision takes them: a sequence of NodeInfo that
    also reads the nodes' numbers as arrays (entry ``i`` for the ``i``-th node of the block)."""

    __slots__ = ("_infos", "positions", "table")

    def __init__(self, table: NodeTable, positions: Indices) -> None:
        self.table = table
        self.positions = positions
        self._infos: list[NodeInfo] | None = None

    @classmethod
    def of(cls, info: NodeInfo) -> NodeBlock:
        """A block of one node, read from the NodeInfo itself (it need not be in a snapshot)."""
        return NodeTable([info]).all()

    def __len__(self) -> int:
        return len(self.positions)

    @overload
    def __getitem__(self, index: int) -> NodeInfo: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[NodeInfo]: ...

    def __getitem__(self, index: int | slice) -> NodeInfo | Sequence[NodeInfo]:
        if isinstance(index, slice):
            return self.infos[index]
        # One node (a chosen or reported one) is looked up without listing the whole block.
        return self.table.infos[int(self.positions[index])]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.infos)

    def __repr__(self) -> str:
        return f"NodeBlock({[info.name for info in self.infos]})"

    @property
    def infos(self) -> list[NodeInfo]:
        if self._infos is None:
            infos = self.table.infos
            self._infos = [infos[i] for i in self.positions.tolist()]
        return self._infos

    def take(self, which: npt.NDArray[np.bool_] | Indices) -> NodeBlock:
        """The nodes that a mask selects, or at these indices, in this block's order."""
        return NodeBlock(self.table, self.positions[which])

    def allocatable(self, name: str) -> Array:
        return self.table.gather((_ALLOCATABLE, name), self.positions)

    def requested(self, name: str) -> Array:
        """What the node's pods request of ``name``."""
        return self.table.gather((_REQUESTED, name), self.positions)

    def nonzero_requested(self, name: str) -> Array:
        """As :meth:`requested`, with kube-scheduler's defaults for pods that request no CPU or
        memory (``name`` is cpu or memory)."""
        return self.table.gather((_NONZERO_REQUESTED, name), self.positions)

    def pod_count(self) -> Array:
        return self.table.gather(_POD_COUNT, self.positions)

    def used_port_count(self) -> Array:
        return self.table.gather(_PORT_COUNT, self.positions)

    def taint_sets(self) -> Array:
        """A code per node: equal for nodes with equal taints, -1 for a node without taints."""
        return self.table.taint_sets(self.positions)

    def lookup(self, labels: LabelMap) -> Array:
        """Each node's number by its label, as ``labels`` maps it."""
        return self.table.label_lookup(labels, self.positions)

    def label_kinds(self, keys: Iterable[str]) -> Array | None:
        """A number per node, equal for nodes with equal values (or equally no value) of every
        label of ``keys``; None when there would be too many kinds to number in int64."""
        kinds: Array = np.zeros(len(self.positions), np.int64)
        count = 1
        for key in keys:
            codes, known = self.table.label_codes(key)
            count *= known + 1
            if count > EXACT_LIMIT:
                return None
            kinds = kinds * (known + 1) + codes[self.positions] + 1
        return kinds

    def lists_image(self, image: str) -> npt.NDArray[np.bool_]:
        """Whether each node lists ``image`` (a name as in ``status.images[].names``)."""
        return self.table.lists_image(image, self.positions)

    def unschedulable(self) -> npt.NDArray[np.bool_]:
        flags: npt.NDArray[np.bool_] = self.table.gather(_UNSCHEDULABLE, self.positions) != 0
        return flags
