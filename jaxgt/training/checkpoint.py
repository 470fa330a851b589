"""Orbax checkpoints of a training run: any pytree of arrays (network, optimiser state,
buffers, step counters, random keys) with JSON metadata naming the game and the network
architecture, so that resuming refuses a checkpoint of another game or architecture.

Layout: ``DIR/<step>/state`` (orbax standard pytree) and ``DIR/<step>/metadata`` (JSON),
written synchronously by an ``orbax.checkpoint.CheckpointManager``. ``jax.random`` keys
round-trip exactly, typed (``jax.random.key``) or raw ``uint32``: typed keys are stored as
their key data and re-wrapped with the template's implementation.

Errors: :class:`CheckpointError` (a ``ValueError``) for a missing directory or step, a
corrupt or incomplete checkpoint, a different pytree structure, and a metadata mismatch
(the message names the first differing entry, game identity first).
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core.checks import check_nonnegative_int

GAME_KEYS = ("game", "fingerprint")
"""Metadata entries that identify the game (checked first)."""


class CheckpointError(ValueError):
  """A checkpoint is missing, unreadable, or belongs to another game or architecture."""


def network_metadata(model) -> dict:
  """Game identity and architecture of a :class:`jaxgt.nets.cvpn.CVPN` as JSON-able metadata
  (game name and fingerprint, hidden sizes, embedding size, encoding shapes)."""
  enc = model.encoding
  return {"game": enc.game.name, "fingerprint": str(enc.game.fingerprint),
          "network": "cvpn", "hidden": [int(h) for h in model.hidden],
          "embed_dim": int(model.embed_dim), "k_max": int(enc.k_max),
          "num_actions": int(enc.num_actions), "feature_size": int(enc.feature_size),
          "num_public_states": int(enc.num_public_states)}


def _manager(directory, create: bool):
  from jaxgt.extras import require
  ocp = require("train", "checkpoints")  # imported on use: orbax is heavy
  options = ocp.CheckpointManagerOptions(enable_async_checkpointing=False, create=create)
  return ocp, ocp.CheckpointManager(os.fspath(pathlib.Path(directory).absolute()),
                                    options=options)


def _is_typed_key(x) -> bool:
  return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _to_storable(tree):
  return jax.tree_util.tree_map(lambda x: jax.random.key_data(x) if _is_typed_key(x) else x, tree)


def _jsonable(metadata: dict) -> dict:
  try:
    return json.loads(json.dumps(metadata))
  except (TypeError, ValueError) as e:
    raise ValueError(f"checkpoint metadata must be JSON-serialisable: {e}") from None


def save(directory, step: int, state: Any, metadata: dict) -> pathlib.Path:
  """Writes ``state`` (a pytree of arrays) and ``metadata`` (a JSON-able dict) as checkpoint
  ``step`` under ``directory`` (created if needed); returns the step's directory."""
  step = check_nonnegative_int("step", step)
  if not isinstance(metadata, dict):
    raise ValueError(f"metadata must be a dict, got {type(metadata).__name__}")
  meta = _jsonable(metadata)
  ocp, manager = _manager(directory, create=True)
  if step in manager.all_steps():
    raise CheckpointError(f"checkpoint step {step} already exists in {directory}")
  manager.save(step, args=ocp.args.Composite(state=ocp.args.StandardSave(_to_storable(state)),
                                             metadata=ocp.args.JsonSave(meta)))
  manager.wait_until_finished()
  manager.close()
  return pathlib.Path(directory) / str(step)


def prune(directory, keep_latest: int, keep_every: int = 0) -> list[int]:
  """Deletes the checkpoints under ``directory`` except the ``keep_latest`` newest and, with
  ``keep_every``, the oldest one in each window of ``keep_every`` steps (``step //
  keep_every``; such a checkpoint stays the oldest of its window, so it is never deleted
  later). ``keep_latest=0`` keeps every checkpoint. Returns the deleted steps, oldest first."""
  keep_latest = check_nonnegative_int("keep_latest", keep_latest)
  keep_every = check_nonnegative_int("keep_every", keep_every)
  if not keep_latest or not pathlib.Path(directory).is_dir():
    return []
  _, manager = _manager(directory, create=False)
  steps = sorted(int(s) for s in manager.all_steps())
  kept = set(steps[-keep_latest:])
  if keep_every:
    first = {}
    for s in steps:
      first.setdefault(s // keep_every, s)
    kept |= set(first.values())
  deleted = [s for s in steps if s not in kept]
  for s in deleted:
    manager.delete(s)
  manager.close()
  return deleted


def latest_step(directory) -> int | None:
  """The newest complete checkpoint step under ``directory`` (``None`` if there is none)."""
  if not pathlib.Path(directory).is_dir():
    return None
  _, manager = _manager(directory, create=False)
  step = manager.latest_step()
  manager.close()
  return None if step is None else int(step)


def _check_metadata(stored: dict, expected: dict, where: str, normalise=None) -> None:
  keys = [k for k in GAME_KEYS if k in expected] + sorted(k for k in expected
                                                           if k not in GAME_KEYS)
  want = _jsonable(expected)
  for k in keys:
    if k not in stored:
      raise CheckpointError(f"checkpoint {where} has no metadata entry {k!r} (expected "
                            f"{want[k]!r})")
    if k in (normalise or {}):
      try:  # e.g. a config written before a field existed, read with that field's default
        stored = dict(stored, **{k: _jsonable(normalise[k](stored[k]))})
      except (ValueError, TypeError, KeyError):
        pass  # compared as stored: the mismatch below names it
    if stored[k] != want[k]:
      what = "game" if k in GAME_KEYS else "architecture/configuration"
      raise CheckpointError(f"checkpoint {where} is for another {what}: {k} = {stored[k]!r} in "
                            f"the checkpoint, {want[k]!r} here")


def read_metadata(directory, step: int | None = None) -> dict:
  """The metadata of checkpoint ``step`` (default the latest)."""
  ocp, manager, step, where = _open(directory, step)
  try:
    out = manager.restore(step, args=ocp.args.Composite(metadata=ocp.args.JsonRestore()))
    return dict(out["metadata"])
  except Exception as e:  # orbax raises many kinds on damaged files
    raise CheckpointError(f"checkpoint {where} cannot be read (corrupt or incomplete): "
                          f"{type(e).__name__}: {e}") from e
  finally:
    manager.close()


def _brief(error, lines: int = 4) -> str:
  """The first unindented lines of ``error``'s message (orbax appends whole array dumps)."""
  kept = [ln.strip() for ln in str(error).splitlines() if ln.strip() and not ln[:1].isspace()
          and not ln.startswith("If this mismatch is intentional")]  # orbax's advice to callers
  return " ".join(kept[:lines]) + (" ..." if len(kept) > lines else "")


def _open(directory, step):
  if not pathlib.Path(directory).is_dir():
    raise CheckpointError(f"no checkpoint directory {directory}")
  ocp, manager = _manager(directory, create=False)
  steps = sorted(manager.all_steps())
  if step is None:
    if not steps:
      manager.close()
      raise CheckpointError(f"no checkpoint in {directory}")
    step = steps[-1]
  elif step not in steps:
    manager.close()
    raise CheckpointError(f"no checkpoint step {step} in {directory} (steps: {steps})")
  return ocp, manager, int(step), f"{directory} step {step}"


def restore_stored(directory, step: int | None = None) -> tuple[Any, str]:
  """``(state, where)``: the stored state pytree of checkpoint ``step`` (default the latest)
  as host numpy arrays, whatever devices it was saved from (a run trained on a CPU restores
  on a GPU: the target is built from the stored shapes and dtypes, not their shardings)."""
  ocp, manager, step, where = _open(directory, step)
  try:
    meta = ocp.StandardCheckpointHandler().metadata(
        pathlib.Path(directory).resolve() / str(step) / "state")
    target = jax.tree_util.tree_map(lambda m: np.zeros(m.shape, m.dtype), meta.tree)
    raw = manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(target)))
    return raw["state"], where
  except Exception as e:  # orbax raises many kinds on damaged files
    raise CheckpointError(f"checkpoint {where} cannot be read: {type(e).__name__}: "
                          f"{_brief(e)}") from e
  finally:
    manager.close()


def restore(directory, template: Any, metadata: dict, step: int | None = None, *,
            normalise: dict | None = None) -> Any:
  """The pytree of checkpoint ``step`` (default the latest) with ``template``'s structure,
  shapes and dtypes (typed keys re-wrapped), after checking that its metadata agrees with
  ``metadata`` on every entry ``metadata`` names (:class:`CheckpointError` otherwise);
  ``normalise`` maps an entry's name to a function applied to the stored value first."""
  ocp, manager, step, where = _open(directory, step)
  try:
    try:
      stored = manager.restore(step, args=ocp.args.Composite(metadata=ocp.args.JsonRestore()))
      stored = dict(stored["metadata"])
    except Exception as e:
      raise CheckpointError(f"checkpoint {where} cannot be read (corrupt or incomplete): "
                            f"{type(e).__name__}: {e}") from e
    _check_metadata(stored, metadata, where, normalise)
    target = jax.tree_util.tree_map(
        lambda x: np.zeros(np.shape(x), np.asarray(x).dtype) if not _is_typed_key(x)
        else np.zeros(jax.random.key_data(x).shape, np.uint32), template)
    try:
      out = manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(target)))
      state = out["state"]
    except Exception as e:
      raise CheckpointError(f"checkpoint {where} cannot be restored into this state (corrupt, or "
                            f"another structure, e.g. a run of an earlier jaxgt): "
                            f"{type(e).__name__}: {_brief(e)}") from e
  finally:
    manager.close()
  leaves_t, treedef = jax.tree_util.tree_flatten(template)
  leaves_s = jax.tree_util.tree_leaves(state)
  if len(leaves_s) != len(leaves_t):
    raise CheckpointError(f"checkpoint {where} holds {len(leaves_s)} arrays, the template "
                          f"{len(leaves_t)}")
  out = []
  for t, s in zip(leaves_t, leaves_s):
    if _is_typed_key(t):
      out.append(jax.random.wrap_key_data(jnp.asarray(s, jnp.uint32),
                                          impl=jax.random.key_impl(t)))
    else:
      s = jnp.asarray(s)
      if s.shape != np.shape(t):
        raise CheckpointError(f"checkpoint {where}: an array has shape {s.shape}, the template "
                              f"{np.shape(t)}")
      out.append(s.astype(np.asarray(t).dtype))
  return jax.tree_util.tree_unflatten(treedef, out)
