"""Spreading batched work over devices and hosts with JAX's own sharding.

Everything here wraps the solvers and searches unchanged: a one-axis
:class:`jax.sharding.Mesh` (axis :data:`BATCH`) over every device of every
process, :class:`~jax.sharding.NamedSharding` for the arrays, XLA's SPMD
partitioner for independent rows, and :func:`jax.shard_map` where a
collective is needed (increments of sampled solvers, gradients of a learner).

* :func:`run_batch` / :func:`map_batch`: a batch of root beliefs, subgame
  solves or searches split over the devices (the batch is
  padded to a multiple of the device count with copies of its last row, and
  trimmed after). Rows are independent, so each equals the single-device
  result (up to XLA choosing a different fusion for the smaller per-device
  shape: bitwise on CPU in the tests).
* :func:`sampled_run`: a sampled solver (MCCFR) whose step is a sum over
  trajectories runs ``solver.batch`` trajectories per player on every device
  from the same state, each device with its own key
  (``fold_in(key, device)``); the increments of the float state fields are
  summed across devices (``psum``) after every step, so one step draws
  ``devices * batch`` trajectories per player. Deterministic per key and
  device count. (Equal to *one* step of ``devices * batch`` trajectories
  only if the solver reduced between its two per-player half steps, which
  needs a hook in the solver; reducing once per step is the usual
  data-parallel MCCFR.)
* :func:`shard_game` / :func:`shard_state`: one game's arrays spread over the
  devices (terminals padded with zero-weight terminals, every array whose
  leading axis divides evenly split along it), for games whose terminal or
  information-state arrays do not fit one device; CFR then runs on them
  unchanged (the same iterates up to the order of the cross-device sums).
* :func:`data_parallel`: ``pmean`` of a per-shard function (loss, gradients)
  over a batch split across devices, for a learner.

Multi-host: start one process per host (or several per host on CPU) and call
:func:`initialize` before anything else touches JAX; :func:`mesh` then spans
every process's devices and every function here runs unchanged (each process
calls it with the same arguments). A script ``train.py`` that begins::

    import sys
    from jaxgt import sharding
    sharding.initialize("host0:12345", num_processes=2, process_id=int(sys.argv[1]))
    m = sharding.mesh()          # all devices of both processes

is launched as ``python train.py 0`` on host0 and ``python train.py 1`` on
the other host (on one machine, two shells; CPU collectives go over gloo).
Host arrays are placed with ``jax.make_array_from_callback`` (each process
supplies its own shards), and :func:`to_host` gathers results on every
process. ``tests/sharding_checks.py`` is such a script, and
``tests/test_sharding.py`` launches two local processes of it.

Shape letters: ``B`` batch, ``T`` terminals, ``I`` information states, ``A``
actions, ``n`` devices on the mesh.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxgt.core.checks import check_index, check_key, check_positive_int

BATCH = "batch"
"""The mesh axis every function here splits over."""


def initialize(coordinator_address: str, num_processes: int, process_id: int, *,
               local_device_ids=None, cpu_collectives: str = "gloo") -> None:
  """``jax.distributed.initialize`` for multi-host runs, before any other JAX call.

  On CPU the cross-process collectives go through ``cpu_collectives``
  (``"gloo"``; ``"mpi"`` where built). ``coordinator_address`` is
  ``host:port`` of process 0.
  """
  check_positive_int("num_processes", num_processes)
  check_index("process_id", process_id, num_processes)
  jax.config.update("jax_cpu_collectives_implementation", cpu_collectives)
  jax.distributed.initialize(coordinator_address=coordinator_address,
                             num_processes=num_processes, process_id=process_id,
                             local_device_ids=local_device_ids)


def mesh(devices=None, axis: str = BATCH) -> Mesh:
  """A one-axis mesh over ``devices`` (default: every device of every process)."""
  devices = jax.devices() if devices is None else list(devices)
  if not devices:
    raise ValueError("mesh needs at least one device")
  return Mesh(np.asarray(devices), (axis,))


def _size(m: Mesh) -> int:
  return int(m.devices.size)


def _axis(m: Mesh) -> str:
  return m.axis_names[0]


def place(x, sharding: NamedSharding):
  """Host or device array ``x`` as a global array with ``sharding`` (multi-process safe)."""
  x = np.asarray(x)
  return jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])


def to_host(tree):
  """Every leaf as a NumPy array on every process (gathers shards across processes)."""
  if jax.process_count() > 1:
    from jax.experimental import multihost_utils
    return multihost_utils.process_allgather(tree, tiled=True)
  return jax.tree_util.tree_map(np.asarray, tree)


def _pad_rows(x, rows: int):
  """``x`` with its leading axis padded to ``rows`` by repeating its last row."""
  x = np.asarray(x)
  if x.shape[0] == rows:
    return x
  return np.concatenate([x, np.repeat(x[-1:], rows - x.shape[0], axis=0)])


def shard_rows(tree, m: Mesh):
  """Every leaf of ``tree`` (leading axis ``B``) padded to a multiple of the
  device count and split along that axis; returns ``(sharded tree, B)``."""
  leaves = jax.tree_util.tree_leaves(tree)
  if not leaves:
    raise ValueError("shard_rows needs at least one array")
  b = int(np.shape(leaves[0])[0]) if np.ndim(leaves[0]) else 0
  if b < 1 or any(np.ndim(x) < 1 or np.shape(x)[0] != b for x in leaves):
    raise ValueError("every array must have the same leading (batch) axis of size >= 1, got "
                     f"shapes {[np.shape(x) for x in leaves]}")
  n = _size(m)
  rows = -(-b // n) * n
  spec = NamedSharding(m, PartitionSpec(_axis(m)))
  return jax.tree_util.tree_map(lambda x: place(_pad_rows(x, rows), spec), tree), b


def replicate(tree, m: Mesh):
  """Every leaf of ``tree`` copied to every device of the mesh."""
  spec = NamedSharding(m, PartitionSpec())
  return jax.tree_util.tree_map(lambda x: place(x, spec), tree)


def _trim(tree, b: int):
  return jax.tree_util.tree_map(lambda x: x[:b], tree)


def map_batch(fn: Callable, m: Mesh, *batched, static=()) -> Any:
  """``fn(*static, *batched)`` with every array of ``batched`` split over the mesh.

  ``fn`` must treat the rows of its batched arguments independently (a
  ``vmap``-ed solve or search) and return arrays with the same leading axis;
  ``static`` arguments (a tree, an evaluator state) are replicated. Returns
  the result for the ``B`` given rows (padding trimmed).
  """
  sharded, b = shard_rows(tuple(batched), m)
  return _trim(fn(*replicate(static, m), *sharded), b)


def run_batch(solver, tree, state, num_steps: int, m: Mesh):
  """``solver.run_batch(tree, state, num_steps)`` with the batch split over ``m``.

  ``state`` is a batched CFR state (``solver.init_batch``); each row equals
  the single-device run.
  """
  return map_batch(lambda t, s: solver.run_batch(t, s, num_steps), m, state, static=(tree,))


# ------------------------------------------------------------------ sampled solvers
def _is_float(x) -> bool:
  return jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating)


@functools.lru_cache(maxsize=32)
def _sampled_fn(solver, m: Mesh):
  axis = _axis(m)

  def local(tree, state, num_steps, key):
    key = jax.random.fold_in(key, lax.axis_index(axis))

    def body(_, s):
      new = solver.run(tree, s, 1, key)
      return jax.tree_util.tree_map(
          lambda old, x: old + lax.psum(x - old, axis) if _is_float(x) else lax.pmax(x, axis),
          s, new)
    return lax.fori_loop(0, num_steps, body, state)

  # check_vma=False: the solver's own loops start from constants that the
  # per-device key makes device-varying; the psum/pmax make the result replicated.
  replicated = PartitionSpec()
  return jax.jit(jax.shard_map(local, mesh=m, in_specs=replicated, out_specs=replicated,
                               check_vma=False))


def sampled_run(solver, tree, state, num_steps: int, key, m: Mesh):
  """``num_steps`` steps of a sampled solver, its trajectories spread over ``m`` (module doc).

  Every device runs ``solver.run(tree, s, 1, fold_in(key, device))`` from the
  same state ``s``; the float fields' increments are summed across devices.
  For solvers whose step adds per-trajectory terms (MCCFR outcome and
  external sampling).
  """
  check_key(key)
  check_positive_int("num_steps", num_steps)
  tree, state = replicate((tree, state), m)
  return _sampled_fn(solver, m)(tree, state, jnp.asarray(num_steps, jnp.int32), key)


# ------------------------------------------------------------------ one game over devices
def _leading_spec(x, n: int, axis: str) -> PartitionSpec:
  shape = np.shape(x)
  return PartitionSpec(axis) if shape and shape[0] % n == 0 and shape[0] >= n else PartitionSpec()


def shard_game(tree, m: Mesh):
  """``tree`` (a :class:`~jaxgt.core.game_tree.GameTree`) spread over the mesh.

  Terminals are padded to a multiple of the device count with terminals of
  payoff and chance zero reached by both players' empty sequences (they add
  zero to every counterfactual value), so ``terminal_*`` arrays split evenly;
  every other array whose leading axis (histories, information states,
  public states) divides evenly is split along it, the rest replicated.
  CFR runs on the result as on ``tree``; a state must be made from the
  padded tree (``solver.init(sharded)``) or padded with :func:`shard_state`.

  The cross-device sums add in another order than one device's, so iterates
  agree to rounding (1e-13 on Leduc in float64); regret matching is
  discontinuous where a regret is exactly zero, so a game with exact ties
  can see a rounding-sized regret flip a strategy (Liar's Dice (1,1): 8 of
  12288 information states differ by 1e-3 after two iterations).
  """
  n, axis = _size(m), _axis(m)
  T = tree.num_terminals
  pad = -(-T // n) * n - T
  empty = np.asarray([pt.num_infostates * tree.num_actions for pt in tree.players], np.int32)
  payoff, chance = np.asarray(tree.terminal_payoff), np.asarray(tree.terminal_chance)
  padded = tree.replace(
      terminal_history=np.concatenate([np.asarray(tree.terminal_history),
                                       np.full(pad, -1, np.int32)]),
      terminal_payoff=np.concatenate([payoff, np.zeros(pad, payoff.dtype)]),
      terminal_chance=np.concatenate([chance, np.zeros(pad, chance.dtype)]),
      terminal_seq=np.concatenate([np.asarray(tree.terminal_seq),
                                   np.repeat(empty[:, None], pad, axis=1)], axis=1),
      num_terminals=T + pad)

  def put(x):
    if np.ndim(x) == 2 and np.shape(x)[0] == 2 and np.shape(x)[1] % n == 0:  # [2, T], [2, H]
      return place(x, NamedSharding(m, PartitionSpec(None, axis)))
    return place(x, NamedSharding(m, _leading_spec(x, n, axis)))
  return jax.tree_util.tree_map(put, padded)


def shard_state(state, sharded_tree, m: Mesh):
  """A CFR state of the unpadded game, on the mesh for :func:`shard_game`'s tree.

  Its terminal weights ``[T]`` are padded with zeros; ``[I, A]`` fields are
  split along ``I`` where it divides evenly.
  """
  n, axis = _size(m), _axis(m)
  w = np.asarray(state.weights)
  w = np.concatenate([w, np.zeros(sharded_tree.num_terminals - w.shape[-1], w.dtype)])
  state = state.replace(weights=w)
  return jax.tree_util.tree_map(
      lambda x: place(x, NamedSharding(m, _leading_spec(x, n, axis))), state)


# ------------------------------------------------------------------ learners
def data_parallel(fn: Callable, m: Mesh) -> Callable:
  """``g(params, batch) = mean over devices of fn(params, shard of batch)``.

  ``batch`` leaves are split along their leading axis (which must divide
  evenly over the devices); ``params`` are replicated. With ``fn`` a mean
  loss and its gradients (``jax.value_and_grad``), equal shard sizes make
  the result the full batch's loss and gradients: a data-parallel learner
  step.
  """
  axis = _axis(m)

  def local(params, batch):
    return lax.pmean(fn(params, batch), axis)
  # check_vma=False keeps gradients with respect to the replicated params
  # per device (with it, their transpose would already sum them over devices).
  g = jax.jit(jax.shard_map(local, mesh=m, in_specs=(PartitionSpec(), PartitionSpec(axis)),
                            out_specs=PartitionSpec(), check_vma=False))

  def call(params, batch):
    n = _size(m)
    for x in jax.tree_util.tree_leaves(batch):
      if np.ndim(x) < 1 or np.shape(x)[0] % n:
        raise ValueError(f"data_parallel: batch leading axis must divide evenly over {n} "
                         f"devices, got shape {np.shape(x)}")
    return g(params, batch)
  return call
