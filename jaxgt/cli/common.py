"""Helpers shared by the command modules."""

from __future__ import annotations

import json
import math
import os
import pathlib

MAX_HISTORIES = 5_000_000
"""The default enumeration limit of the commands (``--max-histories``)."""
PAYOFF = "game payoff per episode"
"""The unit of payoffs, values and exploitabilities in every ``--json`` object (its ``units``)."""
PROBABILITY = "fraction of episodes"
"""The unit of win rates (a draw counts half)."""


def add_max_histories(parser) -> None:
  """The ``--max-histories N`` flag of a command that enumerates its game."""
  parser.add_argument("--max-histories", type=int, default=MAX_HISTORIES, metavar="N",
                      help="the enumeration limit: a game with more histories is refused "
                           f"(default {MAX_HISTORIES:,})")


def size_message(e) -> str:
  """The command line's words for a :class:`~jaxgt.games.size.GameTooLargeError`, from its
  fields: how large the game is, the limit as the flag ``--max-histories`` that raises it (or,
  when memory refused it, the memory), ``"not enumerable within N histories"`` first."""
  from jaxgt.games.size import format_count
  if e.limit is None:  # an error raised without its fields: the library's own words
    return str(e)
  game = f"{e.game}: " if e.game else ""
  if e.memory_bytes is not None:
    size = (f"at least {e.counted:,} histories (counted before stopping) would need more than"
            if e.counted is not None else
            f"about {format_count(e.log10_histories)} histories would need about")
    return (f"{game}not enumerable on this machine: {size} {e.memory_bytes / 2**30:,.1f} GiB against "
            f"{e.available_bytes / 2**30:,.1f} GiB available; it is played, sampled and "
            "searched through its rules")
  if e.counted is not None:
    size = f" (counted {e.counted:,} before stopping)"
  else:
    over = e.log10_histories - math.log10(max(e.limit, 1))
    times = f"{10 ** over:,.1f}" if over < 6 else format_count(over)
    how = f" ({e.detail})" if e.detail else ""
    size = (f": about {format_count(e.log10_histories)} histories{how}, {times} times the "
            "limit, refused before enumerating")
  return (f"{game}not enumerable within {e.limit:,} histories{size}; pass --max-histories N "
          "to raise the limit")


def format_duration(seconds: float) -> str:
  """``"45s"``, ``"3m12s"``, ``"2h05m"``: a duration to the second (minute above an hour)."""
  seconds = max(0, int(round(seconds)))
  if seconds < 60:
    return f"{seconds}s"
  if seconds < 3600:
    return f"{seconds // 60}m{seconds % 60:02d}s"
  return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def rate_and_eta(done: float, seconds: float, unit: str, remaining: float | None = None,
                 remaining_seconds: float | None = None) -> str:
  """``"  123 it/s  ETA 3m12s"``: the rate of ``done`` units in ``seconds`` and, where the
  total is known (``remaining`` units, or a time budget with ``remaining_seconds`` left; the
  sooner end when both), the time left at that rate; ``""`` before any unit is done."""
  if done <= 0 or seconds <= 0:
    return ""
  rate = done / seconds
  shown = f"{rate:.3g}" if rate < 1000 else f"{rate:,.0f}"
  etas = [] if remaining is None else [max(remaining, 0) / rate]
  if remaining_seconds is not None:
    etas.append(max(remaining_seconds, 0.0))
  return f"  {shown} {unit}/s" + (f"  ETA {format_duration(min(etas))}" if etas else "")


def check_positive(args, *names: str) -> None:
  """Raises ``ValueError`` naming the flag unless each option of ``args`` named in ``names``
  (given; ``None`` passes) is a positive number (called before any game is loaded)."""
  for name in names:
    value = getattr(args, name, None)
    if value is not None and not value > 0:
      raise ValueError(f"--{name.replace('_', '-')} must be positive, got {value}")


def print_json(doc: dict) -> None:
  """Prints ``doc`` as the one JSON object of a ``--json`` command (NumPy values as plain
  numbers), on stdout."""
  print(json.dumps(doc, default=_plain), flush=True)


def _plain(x):
  import numpy as np
  if isinstance(x, np.ndarray):
    return x.tolist()
  if isinstance(x, np.generic):
    return x.item()
  raise TypeError(f"not JSON serializable: {type(x).__name__}")


def plural(n: int, word: str, many: str | None = None) -> str:
  """``"1 loss"``, ``"2 losses"``: ``n`` and the noun in its number."""
  if n == 1:
    return f"{n} {word}"
  return f"{n} {many or (word + 'es' if word.endswith(('s', 'x', 'ch', 'sh')) else word + 's')}"


def clipped_interval(center: float, half_width: float, lo: float = 0.0,
                     hi: float = 1.0) -> list:
  """``[center - half_width, center + half_width]`` clipped to ``[lo, hi]``, the range of the
  quantity (a probability's ``[0, 1]`` by default)."""
  return [max(lo, center - half_width), min(hi, center + half_width)]


def device_info() -> dict:
  """``{"backend", "device", "device_count"}`` of the JAX devices this process runs on (the
  first device's kind names them)."""
  import jax
  devices = jax.devices()
  return {"backend": jax.default_backend(), "device": devices[0].device_kind,
          "device_count": len(devices)}


def load_game(text: str, max_histories: int = MAX_HISTORIES):
  """The compiled game named by ``text`` (a registered name or ``openspiel:...``).

  Enumeration prints progress to stderr when it takes more than a few
  seconds; a game clearly over ``max_histories`` is refused before it.
  """
  from jaxgt.core.compiler import load
  return load(text, max_histories, progress=True)


def load_playable(text: str, max_histories: int = MAX_HISTORIES):
  """The game named by ``text`` as matches play it: compiled when it can be enumerated, else
  (a device game over the history limit) its rules, through which agents built for device
  games (random, OOS, ISMCTS, GT-CFR and SoG) play it."""
  from jaxgt.games import make_from_string
  from jaxgt.games.device import DeviceGame
  from jaxgt.games.size import GameTooLargeError
  try:
    return load_game(text, max_histories)
  except GameTooLargeError:
    game = make_from_string(text, max_histories)
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
