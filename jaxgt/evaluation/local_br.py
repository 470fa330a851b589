"""Local best response: a lower bound on a poker policy's exploitability by play.

Lisy and Bowling, "Equilibrium Approximation Quality of Current No-Limit Poker Bots" (2017).
Where exact best response is out of reach (limit hold'em), a *local best response* (LBR)
plays the policy and picks each action greedily: it keeps the opponent's *range* (the
belief over the opponent's private hands given everything LBR has seen), computes ``WP``,
its probability of winning the showdown against that range if the rest of the hand were
checked and called (ties count half), and takes the action of highest value, in chips
relative to folding now (all of LBR's chips already in the pot are sunk):

* fold: ``0`` (only when facing a bet);
* check/call: ``WP * pot - (1 - WP) * to_call``;
* bet/raise by ``r`` chips over the opponent's contribution: ``fp * pot + (1 - fp) *
  (WP * (pot + r) - (1 - WP) * (to_call + r))``, ``fp`` the probability (under the range)
  that the opponent folds to it, and the raise's ``WP`` taken against the hands that call it
  (the range weighted by each hand's probability of not folding; ``calling_range=False``
  keeps the whole range's);

``pot`` the chips both players have in before LBR acts, ``to_call`` the opponent's
contribution minus LBR's. The first of the best actions is taken (fold, then call, then
raises: the paper's rule of folding unless some action is worth more than zero). The range is
Bayes' rule over the hands the cards LBR sees allow: the chance of each deal
(:meth:`~jaxgt.games.device.DeviceGame.private_chance`) times the probability of the
opponent's actions so far with that hand, the policy evaluated at every opponent hand
(``with_private``). LBR's strategy is a legal strategy of the game (it uses only its own
information), so its expected payoff, seated as player ``p``, is at most player ``p``'s best
response value; the mean over both seats is a lower bound on the exploitability (jaxgt's
``nash_conv / 2``), estimated from sampled deals with a 95% interval.

**Poker device games.** LBR plays any device game with a public/private factorisation
(``num_private``) and actions ``0`` fold, ``1`` check/call, ``2..A-1`` bets/raises, that also
provides

* ``with_private(s, player, k)``: ``s`` with ``player``'s private hand replaced by ``k``;
* ``chips(s)``: int ``[2]`` each player's chips in the pot;
* ``showdown_equity(s, player, belief, key, num_boards)``: float ``[]`` ``WP`` against
  ``belief [K]`` (exact, or estimated from ``num_boards`` sampled boards);

as :class:`~jaxgt.games.leduc.LeducPoker`, :class:`~jaxgt.games.generic_poker.GenericPoker`
and :class:`~jaxgt.games.holdem.LimitHoldem` do. The policy is a device policy
(:mod:`jaxgt.evaluation.device_policy`).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core.checks import check_key, check_positive_int
from jaxgt.evaluation.device_policy import batch_of, check_device_policy
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame

FOLD, CALL = 0, 1
POKER_METHODS = ("with_private", "chips", "showdown_equity")
Z95 = 1.959963984540054  # two-sided 95% normal quantile


@dataclasses.dataclass(frozen=True)
class LocalBRResult:
  """What :func:`local_best_response` measured (game units: chips per game)."""

  seat_values: tuple  # (v0, v1): LBR's mean payoff seated as player 0, as player 1
  seat_half_widths: tuple  # 95% half-widths of the seat values
  value: float  # (v0 + v1) / 2: the lower bound on the exploitability (nash_conv / 2)
  half_width: float  # its 95% half-width
  num_games: int  # games played in each seat (2 * num_games in all)
  payoffs: np.ndarray  # [2, num_games] LBR's payoff in each game, by seat
  big_blind: float  # the game's big blind in chips

  @property
  def mbb_per_game(self) -> float:
    """``value`` in thousandths of a big blind per game."""
    return 1000.0 * self.value / self.big_blind


def check_poker_game(game) -> None:
  """Raises ``TypeError`` unless ``game`` is a poker device game (module docstring)."""
  if not isinstance(game, DeviceGame):
    hint = " (for a compiled game pass its .game)" if hasattr(game, "tree") else ""
    raise TypeError(f"local best response needs a poker device game, got "
                    f"{type(game).__name__}{hint}")
  missing = [m for m in POKER_METHODS if not callable(getattr(game, m, None))]
  if game.num_private is None or missing or game.num_actions < 3:
    why = f"it lacks {', '.join(missing)}" if missing else \
        "it has no private hands (num_private)" if game.num_private is None else \
        "it has no bet action"
    raise TypeError(f"local best response needs a poker device game (private hands, actions "
                    f"fold, call, raise..., and {', '.join(POKER_METHODS)}); {game.name} is "
                    f"not one: {why}")


def local_best_response(game: DeviceGame, policy, key, num_games: int, *,
                        batch_size: int = 256, num_boards: int = 32,
                        calling_range: bool = True, progress: bool = False) -> LocalBRResult:
  """LBR (module docstring) against device policy ``policy`` in poker device game ``game``:
  ``num_games`` sampled deals with LBR as player 0 and as many as player 1, the policy
  playing the other seat.

  Games run ``batch_size`` at a time in one jitted program per seat (the last batch padded);
  ``num_boards`` board completions estimate ``WP`` where the game samples it (hold'em; Leduc
  and generic poker are exact). ``calling_range``: a raise's ``WP`` is taken against the hands
  that call it (the range reweighted by each hand's probability of not folding to the raise);
  ``False`` uses the whole range's ``WP`` for every action (cheaper: one equity per decision,
  usually a weaker bound). ``key`` drives the deals, the policy's actions and the sampled
  boards. ``progress`` prints the running estimate after each batch. Bad arguments raise
  ``TypeError`` / ``ValueError`` before anything is compiled."""
  check_poker_game(game)
  num_games = check_positive_int("num_games", num_games)
  batch_size = check_positive_int("batch_size", batch_size)
  num_boards = check_positive_int("num_boards", num_boards)
  if not isinstance(calling_range, bool):
    raise TypeError(f"calling_range must be a bool, got {calling_range!r}")
  key = check_key(key)
  check_device_policy(game, policy)
  # a pytree of arrays (a tabular policy) is an argument of the jitted program, so policies of
  # one shape share a compilation; any other policy is part of the program
  leaves, treedef = jax.tree_util.tree_flatten(policy)
  if leaves and all(isinstance(x, (np.ndarray, jax.Array)) for x in leaves):
    static, leaves = treedef, tuple(leaves)
  else:
    static, leaves = policy, ()
  batch = min(batch_size, num_games)
  chunks = -(-num_games // batch)
  payoffs = np.zeros((2, num_games))
  for seat in (0, 1):
    seat_key = jax.random.fold_in(key, seat)
    for c in range(chunks):
      out = np.asarray(_play(jax.random.fold_in(seat_key, c), leaves, jnp.bool_(calling_range),
                             game=game, policy=static, seat=seat, batch=batch,
                             num_boards=num_boards))
      lo = c * batch
      payoffs[seat, lo:min(lo + batch, num_games)] = out[:num_games - lo]
      if progress:
        done = payoffs[seat, :min(lo + batch, num_games)]
        mean, hw = _mean_half_width(done)
        print(f"local BR seat {seat}: {len(done)}/{num_games} games, {mean:.4f} +- {hw:.4f}",
              flush=True)
  seats = [_mean_half_width(payoffs[p]) for p in (0, 1)]
  value = 0.5 * (seats[0][0] + seats[1][0])
  half = 0.5 * math.sqrt(seats[0][1] ** 2 + seats[1][1] ** 2)
  return LocalBRResult(seat_values=(seats[0][0], seats[1][0]),
                       seat_half_widths=(seats[0][1], seats[1][1]), value=value,
                       half_width=half, num_games=num_games, payoffs=payoffs,
                       big_blind=float(game.big_blind))


def _mean_half_width(x) -> tuple[float, float]:
  x = np.asarray(x, np.float64)
  sd = float(np.std(x, ddof=1)) if len(x) > 1 else math.inf
  return float(np.mean(x)), Z95 * sd / math.sqrt(len(x))


def _with_hands(game, states, player: int, num: int):
  """``states`` ``[B]`` with ``player``'s hand set to each of ``num`` hands: ``[B * num]``
  (game ``b``'s hands at ``b * num .. b * num + num - 1``)."""
  hands = jnp.arange(num, dtype=jnp.int32)
  out = jax.vmap(lambda s: jax.vmap(lambda k: game.with_private(s, player, k))(hands))(states)
  return jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), out)


def _slice(batch: int, size: int) -> int:
  """Games per slice of a computation whose per-game intermediates are about ``size`` words:
  about 2^22 words at a time."""
  return max(1, min(batch, (1 << 22) // max(size, 1)))


def _clean(q):
  """Policy rows with non-finite or negative entries read as zero."""
  return jnp.where(jnp.isfinite(q) & (q > 0), q, 0.0)


def _hand_policies(game, policy, states, player: int):
  """``[B, K, A]``: ``player``'s policy at ``states [B]`` under each of its ``K`` hands."""
  K, A = int(game.num_private[player]), int(game.num_actions)
  batch = jax.tree_util.tree_leaves(states)[0].shape[0]
  return _clean(policy(_with_hands(game, states, player, K), player)).reshape(batch, K, A)


def range_update(game, policy, states, player: int, actions, reach):
  """``[B, K]``: the reach ``reach [B, K]`` of ``player``'s hands times the policy's probability
  of ``actions [B]`` at ``states [B]`` under each hand (Bayes' rule before normalising;
  rescaled so each row's largest entry is one)."""
  q = _hand_policies(game, policy, states, player)
  like = jnp.take_along_axis(q, jnp.asarray(actions, jnp.int32)[:, None, None], axis=2)[..., 0]
  new = reach * like
  return new / jnp.maximum(jnp.max(new, axis=1, keepdims=True), 1e-300)


def action_values(game, policy, states, seat: int, reach, key, *, num_boards: int = 32,
                  calling_range: bool = True):
  """float ``[B, A]``: LBR's value of each action (module docstring; ``-inf`` where illegal)
  at ``states [B]`` where ``seat`` acts, the opponent's hands having reach ``reach [B, K]``
  (:func:`range_update` along the way; ones at the deal). ``key`` draws the boards where the
  game samples ``WP``. ``calling_range`` may be a traced bool."""
  me, opp = seat, 1 - seat
  K0, K1 = (int(k) for k in game.num_private)
  K, A = (K1, K0)[me], int(game.num_actions)
  batch = jax.tree_util.tree_leaves(states)[0].shape[0]
  dtype = jnp.zeros(()).dtype
  vm = jax.vmap

  def prior_of(x):  # [K] the deal's chance of each opponent hand given LBR's
    chance = game.private_chance(x)
    own = game.private_index(x, me)
    return chance[own] if me == 0 else chance[:, own]

  # mapped in slices of the batch, so the [K0, K1] chances (1326^2 in hold'em) stay small
  prior = jax.lax.map(prior_of, states, batch_size=_slice(batch, K0 * K1))
  belief = _normalized(prior * reach, prior)
  board_keys = jax.random.split(key, batch)  # one set of boards for every equity here

  def equity(b):  # [B] WP against beliefs b [B, K], in slices (hold'em's are large)
    return jax.lax.map(lambda x: game.showdown_equity(x[0], me, x[1], x[2], num_boards),
                       (states, b, board_keys),
                       batch_size=_slice(batch, num_boards * K * 16)).astype(dtype)

  wp = equity(belief)
  chips = vm(game.chips)(states).astype(dtype)
  pot, to_call = chips[:, 0] + chips[:, 1], chips[:, opp] - chips[:, me]
  values = [jnp.zeros(batch, dtype), wp * pot - (1 - wp) * to_call]
  for a in range(2, A):
    after = vm(game.step)(states, jnp.full(batch, a, jnp.int32))
    r = vm(game.chips)(after)[:, me].astype(dtype) - chips[:, opp]
    fold = _hand_policies(game, policy, after, opp)[..., FOLD]  # [B, K]
    fp = jnp.sum(belief * fold, axis=1)
    # WP against the hands that call the raise (or the whole range)
    def calling_wp(belief=belief, fold=fold):
      return equity(_normalized(belief * (1 - fold), belief))

    if isinstance(calling_range, bool):
      wp_a = calling_wp() if calling_range else wp
    else:  # a traced flag: one program for both
      wp_a = jax.lax.cond(calling_range, calling_wp, lambda: wp)
    values.append(fp * pot + (1 - fp) * (wp_a * (pot + r) - (1 - wp_a) * (to_call + r)))
  return jnp.where(vm(game.legal_mask)(states), jnp.stack(values, axis=1), -jnp.inf)


def _normalized(weights, fallback):
  """Rows of ``weights [B, K]`` normalised; ``fallback``'s where a row sums to zero."""
  total = jnp.sum(weights, axis=1, keepdims=True)
  other = fallback / jnp.maximum(jnp.sum(fallback, axis=1, keepdims=True), 1e-300)
  return jnp.where(total > 0, weights / jnp.maximum(total, 1e-300), other)


@functools.partial(jax.jit, static_argnames=("game", "policy", "seat", "batch", "num_boards"))
def _play(key, leaves, calling_range, *, game, policy, seat: int, batch: int, num_boards: int):
  """float ``[batch]``: LBR's payoff (seated as ``seat``) in ``batch`` games against ``policy``
  (or, with ``leaves``, the policy of treedef ``policy`` and leaves ``leaves``)."""
  if leaves:
    policy = policy.unflatten(leaves)
  me, opp = seat, 1 - seat
  K = int(game.num_private[opp])
  vm = jax.vmap

  def opponent(s, player, reach, k):
    q = _clean(policy(s, opp)) * vm(game.legal_mask)(s)
    a = jax.random.categorical(k, jnp.where(q > 0, jnp.log(jnp.maximum(q, 1e-300)), -jnp.inf))
    a = a.astype(jnp.int32)
    new = range_update(game, policy, s, opp, a, reach)
    return a, jnp.where((player == opp)[:, None], new, reach)

  def lbr(s, reach, k):
    values = action_values(game, policy, s, me, reach, k, num_boards=num_boards,
                           calling_range=calling_range)
    return jnp.argmax(values, axis=1).astype(jnp.int32)  # the first best: fold, call, raises

  def cond(carry):
    t, s, _, _ = carry
    return (t < game.max_length) & jnp.any(vm(game.current_player)(s) != TERMINAL)

  def body(carry):
    t, s, reach, k = carry
    k, k_chance, k_opp, k_lbr = jax.random.split(k, 4)
    player = vm(game.current_player)(s)
    probs = vm(game.chance_probs)(s)
    a_chance = jax.random.categorical(k_chance, jnp.where(probs > 0, jnp.log(
        jnp.maximum(probs, 1e-300)), -jnp.inf)).astype(jnp.int32)
    zeros = jnp.zeros(batch, jnp.int32)
    a_opp, reach = jax.lax.cond(jnp.any(player == opp),
                                lambda: opponent(s, player, reach, k_opp),
                                lambda: (zeros, reach))
    a_lbr = jax.lax.cond(jnp.any(player == me), lambda: lbr(s, reach, k_lbr), lambda: zeros)
    a = jnp.where(player == CHANCE, a_chance, jnp.where(player == opp, a_opp, a_lbr))
    return t + 1, vm(game.step)(s, a), reach, k

  states = batch_of(game, batch)
  reach = jnp.ones((batch, K), jnp.zeros(()).dtype)
  _, s, _, _ = jax.lax.while_loop(cond, body, (jnp.int32(0), states, reach, key))
  return vm(game.returns)(s)[:, me]
