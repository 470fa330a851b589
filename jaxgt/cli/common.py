"""Helpers shared by the command modules."""

from __future__ import annotations

import os
import pathlib


def load_game(text: str):
  """The compiled game named by ``text`` (a registered name or ``openspiel:...``).

  Enumeration prints progress to stderr when it takes more than a few
  seconds; a game clearly over the history limit is refused before it.
  """
  from jaxgt.core.compiler import load
  return load(text, progress=True)


def load_playable(text: str):
  """The game named by ``text`` as matches play it: compiled when it can be enumerated, else
  (a device game over the history limit) its rules, through which agents built for device
  games (random, OOS, ISMCTS) play it."""
  from jaxgt.games import make_from_string
  from jaxgt.games.device import DeviceGame
  from jaxgt.games.size import GameTooLargeError
  try:
    return load_game(text)
  except GameTooLargeError:
    game = make_from_string(text)
    if not isinstance(game, DeviceGame):
      raise
    return game


def check_writable(paths: dict) -> None:
  """Raises ``ValueError`` unless every file of ``{option: path}`` can be written.

  Called before long work, so a bad ``--save``/``--plot`` is refused at
  once rather than by a traceback after the work. A ``None`` path (the
  option not given) passes.
  """
  for option, path in paths.items():
    if path is not None:
      _check_writable_file(path, option)


def check_writable_dir(option: str, path) -> pathlib.Path:
  """``path`` as a folder that exists or can be made in its nearest existing, writable ancestor;
  ``ValueError`` naming ``option`` else (called before long work, as :func:`check_writable`)."""
  path = probe = pathlib.Path(path)
  while not probe.exists():
    probe = probe.parent
  if probe == path and not path.is_dir():
    raise ValueError(f"{option} {path}: exists and is not a folder")
  if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
    raise ValueError(f"{option} {path}: {probe} is not a writable directory")
  return path


def _check_writable_file(path: str, option: str) -> None:
  if os.path.isdir(path):
    raise ValueError(f"{option} {path}: is a directory, not a file")
  folder = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(folder):
    raise ValueError(f"{option} {path}: the directory {folder} does not exist")
  if not os.access(folder, os.W_OK | os.X_OK):
    raise ValueError(f"{option} {path}: the directory {folder} is not writable")
  if os.path.exists(path) and not os.access(path, os.W_OK):
    raise ValueError(f"{option} {path}: the file exists and is not writable")
