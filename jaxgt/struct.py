"""Immutable pytree dataclasses, every state pytree of jaxgt: :func:`dataclass` and :func:`field`
(the part of ``flax.struct`` jaxgt needs) on :func:`jax.tree_util.register_dataclass`, so that
``import jaxgt`` does not import flax's module system.

    @struct.dataclass
    class State:
      regrets: jax.Array                                 # a leaf
      game: DeviceGame = struct.field(pytree_node=False)  # static: part of the tree's structure

Instances are frozen; ``state.replace(regrets=r)`` returns a copy with fields replaced.
"""

from __future__ import annotations

import dataclasses
import functools

import jax


def field(pytree_node: bool = True, **kwargs):
  """A :func:`dataclasses.field`; ``pytree_node=False`` makes it static (hashable auxiliary data
  of the pytree, not a leaf)."""
  metadata = {**kwargs.pop("metadata", {}), "pytree_node": pytree_node}
  return dataclasses.field(metadata=metadata, **kwargs)


def _replace(self, **updates):
  return dataclasses.replace(self, **updates)


def dataclass(cls=None, **kwargs):
  """Makes ``cls`` a frozen dataclass registered as a pytree (fields are leaves unless declared
  with ``field(pytree_node=False)``) with a ``replace`` method."""
  if cls is None:
    return functools.partial(dataclass, **kwargs)
  kwargs.setdefault("frozen", True)
  cls = dataclasses.dataclass(cls, **kwargs)
  fields = [f for f in dataclasses.fields(cls) if f.init]
  jax.tree_util.register_dataclass(
      cls, data_fields=[f.name for f in fields if f.metadata.get("pytree_node", True)],
      meta_fields=[f.name for f in fields if not f.metadata.get("pytree_node", True)])
  cls.replace = _replace
  return cls
