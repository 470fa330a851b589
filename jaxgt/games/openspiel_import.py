"""Any two-player zero-sum (or constant-sum) OpenSpiel game as a jaxgt :class:`Game`.

``from_openspiel("goofspiel(imp_info=True,num_cards=4)")`` wraps a ``pyspiel``
game; keys are OpenSpiel's strings, so policies export to a ``TabularPolicy``.
**Simultaneous moves** are played in turn as OpenSpiel's
``turn_based_simultaneous_game`` does (same strings: ``"Current player:
p\\n"`` + the game's). **Constant-sum** payoffs ``u0 + u1 = c`` become
``u_i - c / 2``.

Public states (Schmid et al. 2023): with a public observer
(``IIGObservationType(public_info=True, perfect_recall=False,
private_info=NONE)``) the sequence of public observation strings along the
history; otherwise the **common-knowledge partition**: histories sharing an
information state of the acting player, or of the other player at the same
depth, are joined (union-find), then the parents of one component's
histories are joined, until nothing changes (the finest partition containing
every information set that forms a tree; it may merge different depths).

Errors (``ValueError``, before enumeration where possible): more than two
players, general-sum utilities, no information-state strings, more than
``max_histories`` histories (counted first).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from jaxgt.extras import require
from jaxgt.games.base import CHANCE, TERMINAL, Game, did_you_mean
from jaxgt.games.size import GameTooLargeError, openspiel_bounds, refuse_if_too_large

_PREFIX = "openspiel:"
_SIMULTANEOUS = -2   # pyspiel.PlayerId.SIMULTANEOUS
_TURN_BASED = "turn_based_simultaneous_game"


def pyspiel_module():
  """The ``pyspiel`` module; ``ImportError`` naming the ``openspiel`` extra when it is
  missing."""
  return require("openspiel", "OpenSpiel interop")


def load_pyspiel_game(text: str):
  """``pyspiel.load_game(text)``; ``ValueError`` in one line (the closest registered name for an
  unknown one) where pyspiel cannot load it. pyspiel's own report on the C++ stderr (for an
  unknown name, the list of every game) is kept off the terminal."""
  pyspiel = pyspiel_module()
  short = text.split("(", 1)[0].strip()
  names = pyspiel.registered_names()
  if short not in names:
    raise ValueError(f"OpenSpiel cannot load {text!r}: no game named {short!r}"
                     f"{did_you_mean(short, names)}")
  sys.stderr.flush()
  saved = os.dup(2)
  try:
    with open(os.devnull, "w") as null:
      os.dup2(null.fileno(), 2)
      try:
        return pyspiel.load_game(text)
      finally:
        os.dup2(saved, 2)
  except pyspiel.SpielError as e:
    raise ValueError(f"OpenSpiel cannot load {text!r}: {str(e).splitlines()[0]}") from None
  finally:
    os.close(saved)


# State: (jaxgt player, pyspiel state, pending simultaneous actions, action path from the root,
#         tuple of public observations)


class OpenSpielGame(Game):
  """A pyspiel game seen through the :class:`Game` interface (module doc)."""

  name = "openspiel"

  def __init__(self, game: Any, *, max_histories: int = 5_000_000):
    pyspiel = pyspiel_module()
    if isinstance(game, str):
      text = game[len(_PREFIX):] if game.startswith(_PREFIX) else game
      game = load_pyspiel_game(text)
    gtype = game.get_type()
    label = str(game)
    if game.num_players() != 2:
      raise ValueError(f"{label}: jaxgt solves two-player games; this game has "
                       f"{game.num_players()} players")
    U = pyspiel.GameType.Utility
    if gtype.utility == U.ZERO_SUM:
      self._shift = 0.0
    elif gtype.utility == U.CONSTANT_SUM:
      self._shift = float(game.utility_sum()) / 2.0
    else:
      raise ValueError(f"{label}: utility is {gtype.utility.name}; jaxgt needs a "
                       "zero-sum or constant-sum game")
    if not gtype.provides_information_state_string:
      raise ValueError(f"{label}: the game provides no information-state strings; "
                       "jaxgt keys information states by them")
    super().__init__(game=label)
    self.name = _PREFIX + label   # error messages of the compiler name the game
    self.os_game = game
    self._loadable = self._reloads(pyspiel, game, label)
    self.simultaneous = gtype.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS
    self.num_actions = game.num_distinct_actions()
    self._observer = self._public_observer(pyspiel, game)
    self.size_bounds = openspiel_bounds(game)  # refuse a game clearly over the limit fast
    refuse_if_too_large(self, max_histories, bounds=self.size_bounds)
    self.num_histories = self._count(max_histories)
    self._ck = self._common_knowledge() if self._observer is None else None

  @staticmethod
  def _reloads(pyspiel, game, label):
    """Whether ``pyspiel.load_game(str(game))`` gives this game back."""
    short = game.get_type().short_name
    if short not in pyspiel.registered_names():
      return False   # e.g. a matrix game made in Python
    if short == "efg_game" and "filename" not in game.get_parameters():
      return False   # loaded from EFG text: the string names the default EFG game
    try:
      return str(pyspiel.load_game(label)) == label
    except Exception:  # parameters pyspiel cannot parse back
      return False

  @staticmethod
  def _public_observer(pyspiel, game):
    try:
      obs_type = pyspiel.IIGObservationType(public_info=True, perfect_recall=False,
                                            private_info=pyspiel.PrivateInfoType.NONE)
      observer = game.make_observer(obs_type, {})
      obs = None if observer is None else pyspiel._Observation(game, observer)
      if obs is None or not obs.has_string():
        return None
      obs.string_from(game.new_initial_state(), 0)
      return obs
    except Exception:  # the game has no (string) public observer
      return None

  def _wrap(self, o, pending, path, key):
    if o.is_terminal():
      p = TERMINAL
    elif o.is_chance_node():
      p = CHANCE
    else:
      p = o.current_player()
      if p == _SIMULTANEOUS:
        p = len(pending)
        while p < 2 and not o.legal_actions(p):
          pending = pending + (0,)
          p += 1
        if p == 2:   # nobody can move: apply the (empty) joint action
          o = o.clone()
          o.apply_actions(list(pending))
          return self._wrap(o, (), path, key)
    if self._observer is not None:
      key = key + (self._observer.string_from(o, 0),)
    return (p, o, pending, path, key)

  def initial_state(self):
    return self._wrap(self.os_game.new_initial_state(), (), (), ())

  def current_player(self, s):
    return s[0]

  def legal_actions(self, s):
    o = s[1]
    return o.legal_actions(s[0]) if self.simultaneous else o.legal_actions()

  def chance_outcomes(self, s):
    return s[1].chance_outcomes()

  def next_state(self, s, a):
    p, o, pending, path, key = s
    path = path + (a,)
    if p >= 0 and o.current_player() == _SIMULTANEOUS:
      pending = pending + (a,)
      if len(pending) < 2:
        return self._wrap(o, pending, path, key)
      o = o.clone()
      o.apply_actions(list(pending))
      return self._wrap(o, (), path, key)
    return self._wrap(o.child(a), (), path, key)

  def returns(self, s):
    r = s[1].returns()
    return (r[0] - self._shift, r[1] - self._shift)

  def information_state(self, s, player):
    o = s[1]
    if not self.simultaneous:
      return o.information_state_string(player)
    head = f"Current player: {s[0]}\n"
    if s[2] and player < s[0]:
      head += f"Observer's action this turn: {s[2][player]}\n"
    return head + o.information_state_string(player)

  def public_state(self, s):
    return s[4] if self._ck is None else self._ck[s[3]]

  def _children(self, s):
    """Child states of ``s`` (none at a terminal)."""
    p = s[0]
    if p == TERMINAL:
      return []
    acts = [a for a, _ in self.chance_outcomes(s)] if p == CHANCE else self.legal_actions(s)
    return [self.next_state(s, a) for a in acts]

  def _count(self, limit):
    n, stack = 0, [self.initial_state()]
    while stack:
      s = stack.pop()
      n += 1
      if n > limit:
        raise GameTooLargeError(
            f"{self.os_game}: more than max_histories={limit} histories (counted "
            f"{n} before stopping); pass max_histories=... to raise the limit",
            game=f"openspiel:{self.os_game}", limit=int(limit), counted=n)
      stack.extend(self._children(s))
    return n

  def _common_knowledge(self):
    """Path -> public-state id of the common-knowledge partition (module doc)."""
    paths, parent, first = [], [], {}
    up = []

    def find(x):
      while up[x] != x:
        up[x] = up[up[x]]
        x = up[x]
      return x

    def union(a, b):
      a, b = find(a), find(b)
      if a != b:
        up[max(a, b)] = min(a, b)
        return True
      return False

    stack = [(self.initial_state(), -1)]
    while stack:
      s, par = stack.pop()
      h = len(paths)
      paths.append(s[3])
      parent.append(par)
      up.append(h)
      for q in (0, 1):
        try:
          k = self.information_state(s, q)
        except Exception:  # no string at this (e.g. terminal) history
          continue
        k = (q, k) if q == s[0] else (q, len(s[3]), k)  # the other player's: same depth only
        if k in first:
          union(first[k], h)
        else:
          first[k] = h
      stack.extend((c, h) for c in self._children(s))
    changed = True
    while changed:
      changed = False
      rep_parent = {}
      for h in range(1, len(paths)):
        r = find(h)
        q = rep_parent.setdefault(r, parent[h])
        changed |= union(q, parent[h])
    ids = {}
    return {path: ids.setdefault(find(h), len(ids)) for h, path in enumerate(paths)}

  def game_string(self):
    return self.name

  def openspiel_game_string(self):
    """The (turn-based) game string; ``None`` for a game pyspiel cannot reload by name."""
    if not self._loadable:
      return None
    if self.simultaneous:
      return f"{_TURN_BASED}(game={self.params['game']})"
    return self.params["game"]

  def action_string(self, a):
    try:
      return self.os_game.new_initial_state().action_to_string(0, a)
    except Exception:  # the root cannot name player actions
      return str(a)


def from_openspiel(game_or_string: Any, max_histories: int = 5_000_000) -> OpenSpielGame:
  """Wraps a ``pyspiel`` game (object or game string, ``openspiel:`` prefix allowed)."""
  return OpenSpielGame(game_or_string, max_histories=max_histories)
