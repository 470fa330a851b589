"""A solver state on disk: the checkpoints of long :func:`jaxgt.solve` runs.

A checkpoint is one ``.npz`` archive: the leaves of the solver state pytree
(``CFRState``, ``MCCFRState``, ``MMDState``) in flattening order and a JSON header (format,
version, the leaves' shapes and dtypes, and the caller's ``meta``: the game, the solver and its
settings, the iterations done). It is written to a temporary file and renamed over the old one,
so an interrupted write leaves the previous checkpoint intact. Reading raises
``ValueError`` for a file that is not a checkpoint; :func:`load_state` rebuilds the state on
the structure of a fresh one (:func:`check_same_structure`).
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import zipfile

import jax
import numpy as np

FORMAT = "jaxgt-solve-checkpoint"
VERSION = 1
FILE = "solve_checkpoint.npz"
"""The checkpoint's file name in a checkpoint folder (``jaxgt solve --checkpoint DIR``)."""


def save(path, state, meta: dict) -> None:
  """Writes solver state ``state`` with ``meta`` (JSON-serialisable) to ``path``, atomically."""
  leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(state)]
  header = {"format": FORMAT, "version": VERSION, "meta": meta,
            "leaves": [[list(x.shape), x.dtype.name] for x in leaves]}
  path = pathlib.Path(path)
  tmp = path.with_name(path.name + ".tmp")
  with open(tmp, "wb") as f:
    np.savez(f, header=np.frombuffer(json.dumps(header).encode(), np.uint8),
             **{f"leaf{i}": x for i, x in enumerate(leaves)})
  os.replace(tmp, path)


def _read(path):
  try:
    data = pathlib.Path(path).read_bytes()
  except OSError as e:
    raise ValueError(f"cannot read the checkpoint {path}: {e.strerror or e}") from None
  try:
    z = np.load(io.BytesIO(data), allow_pickle=False)
    header = json.loads(bytes(z["header"]).decode())
  except (zipfile.BadZipFile, EOFError, KeyError, ValueError, OSError, UnicodeDecodeError):
    raise ValueError(f"{path} is not a jaxgt solve checkpoint (truncated or corrupt)") from None
  if not isinstance(header, dict) or header.get("format") != FORMAT:
    raise ValueError(f"{path} is not a jaxgt solve checkpoint (bad header)")
  if header.get("version") != VERSION:
    raise ValueError(f"{path}: unsupported checkpoint version {header.get('version')}")
  return z, header


def read_meta(path) -> dict:
  """The ``meta`` a checkpoint was saved with (``ValueError`` if ``path`` is not one)."""
  return _read(path)[1]["meta"]


def load_state(path, template):
  """The solver state saved at ``path``, on the pytree structure of ``template`` (a fresh
  state of the same solver and game: ``solver.init(tree)``); ``ValueError`` when it does not
  fit."""
  z, header = _read(path)
  treedef = jax.tree_util.tree_structure(template)
  if treedef.num_leaves != len(header["leaves"]):
    raise ValueError(f"{path}: the checkpoint holds {len(header['leaves'])} arrays, this solver's "
                     f"state {treedef.num_leaves}: it was saved by another solver or game")
  try:
    leaves = [np.asarray(z[f"leaf{i}"]) for i in range(treedef.num_leaves)]
  except (KeyError, ValueError, OSError, zipfile.BadZipFile):
    raise ValueError(f"{path} is not a jaxgt solve checkpoint (truncated or corrupt)") from None
  state = jax.tree_util.tree_unflatten(treedef, leaves)
  check_same_structure(template, state)
  return jax.tree_util.tree_map(jax.numpy.asarray, state)


def check_same_structure(expected, state) -> None:
  """Raises ``ValueError`` unless solver state ``state`` has the pytree structure, shapes and
  dtypes of ``expected`` (the solver's fresh state for the game)."""
  want, have = jax.tree_util.tree_structure(expected), jax.tree_util.tree_structure(state)
  if want != have:
    raise ValueError(f"the solver state does not fit this solver and game (a "
                     f"{type(state).__name__}, expected a {type(expected).__name__} of the same "
                     "structure)")
  for a, b in zip(jax.tree_util.tree_leaves(expected), jax.tree_util.tree_leaves(state)):
    if np.shape(a) != np.shape(b) or np.asarray(a).dtype != np.asarray(b).dtype:
      raise ValueError(f"the solver state does not fit this solver and game (an array of shape "
                       f"{np.shape(b)} {np.asarray(b).dtype} where {np.shape(a)} "
                       f"{np.asarray(a).dtype} is expected)")
