"""II-Goofspiel II-GS(N) in Python, the test oracle of :mod:`jaxgt.games.goofspiel`.

Lisy, Lanctot, Bowling 2015, Sec. 4.3.

Each player holds bid cards ``0..N-1`` (shown ``1..N``); the point cards are
turned in a fixed order (``points_order``: ascending or descending), so there
are no chance nodes. Each round both players bid one card secretly; the
higher bid wins the point card, a tie discards it. Players observe their own
bids and who won each round, never the opponent's cards. The last round has
a single legal bid each and is played automatically, as in OpenSpiel.

The simultaneous bids are sequential here: player 0 bids, then player 1 bids
without seeing it (player 1's information state does not contain player 0's
pending bid), exactly like OpenSpiel's ``turn_based_simultaneous_game``
around ``goofspiel(imp_info=True,points_order=...,num_cards=N)``:
action ids (bid card index), tree sizes, returns and information-state
strings are identical to that game's.

Point card ``k`` is worth ``k + points_base``; the paper lists the stack as
``0..N-1``, OpenSpiel's values are ``1..N`` (``points_base=1``, the default;
only then is there an OpenSpiel equivalent). **The paper's game** is
registered as ``ii_goofspiel`` (:class:`IIGoofspiel`: ``goofspiel`` with
``points_base=0``, default ``num_cards=6``, II-GS(6)); ``goofspiel`` is
OpenSpiel's. ``returns_type`` follows
OpenSpiel: ``"win_loss"`` (default) pays +1/-1 to the player with more
points (0 on a draw), ``"point_difference"`` pays each player its points
minus the mean, i.e. ``(pts0 - pts1) / 2`` to player 0. Public state: the
winner sequence and whether player 0 has bid in the current round.
"""

from __future__ import annotations

from jaxgt.games.base import TERMINAL, Game

PARAMS = {"num_cards": 4, "returns_type": "win_loss", "points_base": 1,
          "points_order": "ascending"}
_RETURNS = ("win_loss", "point_difference")
_ORDERS = ("ascending", "descending")
_TIE = -3  # winner of a tied round, OpenSpiel's kInvalidPlayer

# State: (player, hands, seqs, wins, win_str, points, pending)
#   hands: per player, bit mask of the card indices still held
#   seqs: per player, own bids so far as OpenSpiel prints them ("2 0 ")
#   wins: winner per round (``_TIE`` on a tie); win_str: the same printed
#   points: (pts0, pts1); pending: player 0's bid this round, -1 if none


class Goofspiel(Game):
  name = "goofspiel"
  param_defaults = PARAMS
  public_actions = False  # bids are secret; only who won each round is seen

  def __init__(self, **params):
    """Checks ``params`` and builds the card tables; point card ``k`` is worth
    ``k + points_base`` (0 for II-Goofspiel, which has no such parameter)."""
    super().__init__(**params)
    params = self.params
    self.points_base = params.get("points_base", 0)
    if params["num_cards"] < 1:
      raise ValueError(f"goofspiel: num_cards must be positive, got {params['num_cards']}")
    if params["returns_type"] not in _RETURNS:
      raise ValueError(f"goofspiel: returns_type must be one of {_RETURNS}, "
                       f"got {params['returns_type']!r}")
    if params["points_order"] not in _ORDERS:
      raise ValueError(f"goofspiel: points_order must be one of {_ORDERS}, "
                       f"got {params['points_order']!r}")
    n = self.num_cards = params["num_cards"]
    self.num_actions = n
    self._cards = {}   # hand mask -> (sorted card list, printed hand)
    # point card index turned in round r
    self._point = [r if params["points_order"] == "ascending" else n - 1 - r for r in range(n)]
    self._dealt = ["".join(f"{self._point[k] + 1} " for k in range(min(r + 1, n)))
                   for r in range(n + 1)]

  def _hand(self, mask):
    out = self._cards.get(mask)
    if out is None:
      cards = [c for c in range(self.num_cards) if mask >> c & 1]
      out = self._cards[mask] = (cards, "".join(f"{c + 1} " for c in cards))
    return out

  # --- rules -------------------------------------------------------------
  def initial_state(self):
    full = (1 << self.num_cards) - 1
    return (0, (full, full), ("", ""), (), "", (0, 0), -1)

  def current_player(self, s):
    return s[0]

  def legal_actions(self, s):
    return self._hand(s[1][s[0]])[0]

  def next_state(self, s, a):
    player, hands, seqs, wins, win_str, points, pending = s
    if player == 0:
      return (1, hands, seqs, wins, win_str, points, a)
    b0, b1 = pending, a
    while True:
      hands = (hands[0] & ~(1 << b0), hands[1] & ~(1 << b1))
      seqs = (f"{seqs[0]}{b0} ", f"{seqs[1]}{b1} ")
      value = self._point[len(wins)] + self.points_base
      if b0 > b1:
        winner, points = 0, (points[0] + value, points[1])
      elif b1 > b0:
        winner, points = 1, (points[0], points[1] + value)
      else:
        winner = _TIE
      wins = wins + (winner,)
      win_str = f"{win_str}{winner} "
      if len(wins) == self.num_cards:
        return (TERMINAL, hands, seqs, wins, win_str, points, -1)
      if len(wins) != self.num_cards - 1:
        return (0, hands, seqs, wins, win_str, points, -1)
      b0, b1 = self._hand(hands[0])[0][0], self._hand(hands[1])[0][0]   # forced last round

  def returns(self, s):
    p0, p1 = s[5]
    if self.params["returns_type"] == "point_difference":
      u0 = (p0 - p1) / 2.0
    else:
      u0 = float((p0 > p1) - (p0 < p1))
    return (u0, -u0)

  def information_state(self, s, player):
    cur, hands, seqs, wins, win_str, points, pending = s
    head = f"Current player: {cur}\n"
    if player < cur:
      head += f"Observer's action this turn: {pending}\n"
    return (f"{head}P{player} hand: {self._hand(hands[player])[1]}\n"
            f"P{player} action sequence: {seqs[player]}\n"
            f"Point card sequence: {self._dealt[len(wins)]}\n"
            f"Win sequence: {win_str}\n"
            f"Points: {points[0]} {points[1]} \n"
            f"Terminal?: {int(cur == TERMINAL)}\n")

  def public_state(self, s):
    return (s[3], s[6] >= 0)

  # --- presentation --------------------------------------------------------
  def action_string(self, a):
    return f"Bid: {a + 1}"

  def openspiel_game_string(self):
    if self.points_base != 1:
      return None
    return ("turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards="
            f"{self.num_cards},points_order={self.params['points_order']},"
            f"returns_type={self.params['returns_type']}))")


class IIGoofspiel(Goofspiel):
  """II-GS(N) exactly as Lisy, Lanctot, Bowling (2015, Sec. 5.3) define it: point cards worth
  ``0..N-1`` (:class:`Goofspiel` with ``points_base=0``); II-GS(6) by default."""

  name = "ii_goofspiel"
  param_defaults = {"num_cards": 6, "returns_type": "win_loss", "points_order": "ascending"}
