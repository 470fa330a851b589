"""Tabular policies: validation, save/load, OpenSpiel conversion and export.

A :class:`Policy` holds ``probs = (sigma0 [I0, A], sigma1 [I1, A])`` indexed
like the compiled game's ``infostate_keys``, with that game's string and
fingerprint. Files are ``.npz`` archives with both arrays and a JSON header
(format version, game string, fingerprint, shapes); loading raises
:class:`PolicyError` (a ``ValueError``) for a corrupt file, another game's
policy or invalid probabilities.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import zipfile
from typing import Any, Callable

import numpy as np

from jaxgt.core.checks import PROB_ATOL
from jaxgt.core.game_tree import CompiledGame
from jaxgt.games.openspiel_import import pyspiel_module

FORMAT = "jaxgt-policy"
VERSION = 1


class PolicyError(ValueError):
  """A policy that does not fit its game, or a file that is not a policy."""


@dataclasses.dataclass(frozen=True, eq=False)
class Policy:
  """A validated tabular policy of a compiled game."""

  game: str  # game string of the game (CompiledGame.name)
  fingerprint: str  # structural fingerprint of that game
  probs: tuple  # (sigma0 [I0, A], sigma1 [I1, A]) NumPy float64 arrays

  @classmethod
  def from_arrays(cls, compiled: CompiledGame, probs, *, atol: float = PROB_ATOL) -> "Policy":
    """Validates ``probs`` against ``compiled`` and wraps it."""
    probs = tuple(np.asarray(p, np.float64) for p in probs)
    validate(compiled, probs, atol=atol)
    return cls(compiled.name, compiled.fingerprint, probs)

  def check_game(self, compiled: CompiledGame) -> None:
    if self.fingerprint != compiled.fingerprint:
      raise PolicyError(
          f"policy is for game {self.game} (fingerprint {self.fingerprint}), not for "
          f"{compiled.name} (fingerprint {compiled.fingerprint})")

  def save(self, path: str | os.PathLike) -> None:
    header = {"format": FORMAT, "version": VERSION, "game": self.game,
              "fingerprint": self.fingerprint,
              "shapes": [list(p.shape) for p in self.probs]}
    with open(path, "wb") as f:
      np.savez_compressed(f, header=np.frombuffer(json.dumps(header).encode(), np.uint8),
                          p0=self.probs[0], p1=self.probs[1])


def validate(compiled: CompiledGame, probs, *, atol: float = PROB_ATOL) -> None:
  """Raises :class:`PolicyError` unless ``probs`` is a policy of ``compiled``."""
  if not isinstance(probs, (tuple, list)) or len(probs) != 2:
    raise PolicyError("a policy is a pair (sigma0 [I0, A], sigma1 [I1, A])")
  tree = compiled.tree
  for p, sig in enumerate(probs):
    sig = np.asarray(sig)
    want = (tree.num_infostates[p], tree.num_actions)
    if sig.shape != want:
      raise PolicyError(f"player {p}: policy has shape {sig.shape}, game {compiled.name} "
                        f"needs {want} (information states x actions)")
    if not np.issubdtype(sig.dtype, np.floating):
      raise PolicyError(f"player {p}: policy dtype {sig.dtype} is not floating point")
    illegal = np.abs(np.where(np.asarray(tree.players[p].legal), 0.0, sig)) > atol
    for wrong, what in ((~np.isfinite(sig), "non-finite probability"),
                        (sig < -atol, "negative probability"),
                        (illegal, "probability on an illegal action")):
      if np.any(wrong):
        bad = int(np.argwhere(wrong)[0, 0])
        raise PolicyError(f"player {p}: {what} at information state "
                          f"{compiled.infostate_keys[p][bad]!r}: {sig[bad].tolist()}")
    sums = sig.sum(-1)
    if np.any(np.abs(sums - 1.0) > atol):
      bad = int(np.argmax(np.abs(sums - 1.0)))
      raise PolicyError(f"player {p}: probabilities at information state "
                        f"{compiled.infostate_keys[p][bad]!r} sum to {sums[bad]:.9g}, not 1")


def load_policy(path: str | os.PathLike, game: CompiledGame | None = None) -> tuple[Policy, CompiledGame]:
  """Loads a policy file; returns it with its compiled game.

  With ``game`` given the file must belong to it; otherwise the game is
  rebuilt from the stored game string.
  """
  header, probs = _read(path)
  if game is None:
    from jaxgt.core.compiler import load as load_game
    game = load_game(header["game"])
  pol = Policy(header["game"], header["fingerprint"], probs)
  pol.check_game(game)
  validate(game, probs)
  return pol, game


def read_header(path: str | os.PathLike) -> dict:
  """The JSON header of a policy file (``format``, ``version``, ``game``, ``fingerprint``,
  ``shapes``), read without building its game; :class:`PolicyError` for a file that is not a
  policy."""
  return _read(path)[0]


def _read(path) -> tuple[dict, tuple]:
  try:
    with open(path, "rb") as f:
      data = f.read()
  except OSError as e:
    raise PolicyError(f"cannot read policy file {path}: {e}") from e
  try:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
      header = json.loads(bytes(z["header"]).decode())
      probs = (np.asarray(z["p0"]), np.asarray(z["p1"]))
  except (zipfile.BadZipFile, EOFError, KeyError, ValueError, OSError, UnicodeDecodeError) as e:
    # NumPy reads any non-archive as pickled data and advises loading it unsafely: not repeated
    why = "not an .npz archive" if "pickle" in str(e) else str(e)
    raise PolicyError(f"{path} is not a jaxgt policy file (truncated or corrupt: {why})") from e
  if not isinstance(header, dict) or header.get("format") != FORMAT:
    raise PolicyError(f"{path} is not a jaxgt policy file (bad header)")
  if header.get("version") != VERSION:
    raise PolicyError(f"{path}: unsupported policy format version {header.get('version')}")
  if [list(p.shape) for p in probs] != header.get("shapes"):
    raise PolicyError(f"{path}: array shapes do not match the header (corrupt file)")
  return header, probs


def lift(policy, source: CompiledGame, target: CompiledGame,
         key_map: Callable[[str], str]) -> Policy:
  """The policy of ``target`` that plays, at each of its information states ``k``, the
  strategy of ``policy`` (a :class:`Policy` of ``source`` or its ``(sigma0, sigma1)``) at
  ``source``'s information state ``key_map(k)`` of the same player.

  For a game and its quotient by a symmetry (``source`` the quotient, ``key_map``
  the canonical key, e.g. :func:`jaxgt.games.leduc.suit_isomorphic_key`; the registered
  ones: :func:`jaxgt.games.quotient_map`), the lifted policy has the quotient policy's
  exploitability. Raises :class:`PolicyError` where
  ``key_map`` names no information state of ``source`` or the legal actions differ.
  """
  if not isinstance(policy, Policy):
    policy = Policy.from_arrays(source, policy)
  policy.check_game(source)
  if source.tree.num_actions != target.tree.num_actions:
    raise PolicyError(f"{source.name} has {source.tree.num_actions} actions, {target.name} "
                      f"{target.tree.num_actions}: a policy cannot be lifted between them")
  lifted = []
  for p in (0, 1):
    index = source.infostate_index(p)
    rows = []
    for key in target.infostate_keys[p]:
      mapped = key_map(key)
      if mapped not in index:
        raise PolicyError(f"player {p}: {target.name}'s information state {key!r} maps to "
                          f"{mapped!r}, which {source.name} does not have")
      rows.append(index[mapped])
    rows = np.asarray(rows, np.int64)
    legal_s = np.asarray(source.tree.players[p].legal)[rows]
    legal_t = np.asarray(target.tree.players[p].legal)
    if np.any(legal_s != legal_t):
      bad = int(np.argwhere(np.any(legal_s != legal_t, axis=1))[0, 0])
      raise PolicyError(f"player {p}: legal actions differ at {target.infostate_keys[p][bad]!r} "
                        f"and {source.name}'s {key_map(target.infostate_keys[p][bad])!r}")
    lifted.append(policy.probs[p][rows])
  return Policy.from_arrays(target, lifted)


# ---------------------------------------------------------------- OpenSpiel
def openspiel_game_string(compiled: CompiledGame) -> str:
  s = compiled.game.openspiel_game_string()
  if s is None:
    raise PolicyError(f"game {compiled.name} has no OpenSpiel equivalent")
  return s


def to_openspiel_dict(policy: Policy, compiled: CompiledGame) -> dict:
  """``{info_state_string: [[action, prob], ...]}`` over legal actions."""
  policy.check_game(compiled)
  out = {}
  for p in (0, 1):
    legal = np.asarray(compiled.tree.players[p].legal)
    for i, key in enumerate(compiled.infostate_keys[p]):
      out[key] = [[int(a), float(policy.probs[p][i, a])] for a in np.flatnonzero(legal[i])]
  return out


def export_openspiel(policy: Policy, compiled: CompiledGame, path: str | os.PathLike) -> None:
  """Writes ``{"game": <pyspiel.load_game string>, "policy": {...}}`` as JSON."""
  doc = {"game": openspiel_game_string(compiled), "policy": to_openspiel_dict(policy, compiled)}
  with open(path, "w") as f:
    json.dump(doc, f)


def to_openspiel(policy: Policy, compiled: CompiledGame, os_game: Any = None):
  """An OpenSpiel ``TabularPolicy`` with the same probabilities."""
  pyspiel = pyspiel_module()
  from open_spiel.python import policy as os_policy
  if os_game is None:
    os_game = pyspiel.load_game(openspiel_game_string(compiled))
  tab = os_policy.TabularPolicy(os_game)
  d = to_openspiel_dict(policy, compiled)
  missing = set(tab.state_lookup) ^ set(d)
  if missing:
    raise PolicyError(f"OpenSpiel game {os_game} and {compiled.name} have different information "
                      f"states (e.g. {sorted(missing)[:3]})")
  for key, pairs in d.items():
    row = tab.policy_for_key(key)
    row[:] = 0.0
    for a, q in pairs:
      row[a] = q
  return tab


def from_openspiel(tabular, compiled: CompiledGame) -> Policy:
  """Reads an OpenSpiel ``TabularPolicy`` (or ``{key: [(a, p), ...]}``) into a Policy."""
  probs = []
  for p in (0, 1):
    keys = compiled.infostate_keys[p]
    sig = np.zeros((len(keys), compiled.tree.num_actions))
    for i, key in enumerate(keys):
      if key not in (tabular if isinstance(tabular, dict) else tabular.state_lookup):
        raise PolicyError(f"OpenSpiel policy has no entry for information state {key!r}")
      if isinstance(tabular, dict):
        for a, q in tabular[key]:
          sig[i, int(a)] = q
      else:
        row = tabular.policy_for_key(key)
        sig[i, :len(row)] = row
    probs.append(sig)
  return Policy.from_arrays(compiled, probs)


def policy_from_table(compiled: CompiledGame, table: dict, *, atol: float = PROB_ATOL) -> Policy:
  """The :class:`Policy` of ``compiled`` that plays ``table = {player: {information-state
  string: probabilities [A]}}`` (a device-game run's export, e.g.
  :meth:`jaxgt.solvers.mccfr.MCCFRSolver.table_policy`) and uniformly over the legal actions
  at the information states the table lacks; raises :class:`PolicyError` for a string that is
  not an information state of the game or invalid probabilities."""
  tree = compiled.tree
  probs = []
  for p in (0, 1):
    legal = np.asarray(tree.players[p].legal)
    sig = legal / np.maximum(legal.sum(-1, keepdims=True), 1)
    index = {k: i for i, k in enumerate(compiled.infostate_keys[p])}
    for k, row in table.get(p, {}).items():
      if k not in index:
        raise PolicyError(f"player {p}: {k!r} is not an information state of {compiled.name}")
      sig[index[k]] = row
    probs.append(sig)
  return Policy.from_arrays(compiled, probs, atol=atol)
