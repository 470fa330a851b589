"""Helpers shared by the command modules."""

from __future__ import annotations


def load_game(text: str):
  """The compiled game named by ``text`` (a registered name or ``openspiel:...``)."""
  from jaxgt.core.compiler import load
  return load(text)
