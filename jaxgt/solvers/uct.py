"""UCT and Smooth UCT self-play search over information states (Heinrich & Silver 2015).

``solver = smooth_uct()`` returns a frozen :class:`UCTSolver` following the
solver protocol (:mod:`jaxgt.solvers.base`; its policy is the average
strategy), so :func:`jaxgt.solvers.base.exploitability_curve` evaluates it.

Extensive-form MCTS (Sec. 3, Algorithm 1): one search tree per player over
that player's information states. The compiled game already enumerates them,
so each player's tree is a fixed-capacity table ``[I_p, A]`` of visit counts
``N`` and mean returns ``Q``; an information state is *in the tree* once it
has been visited (``N(u) = sum_a N(u, a) > 0``). An episode walks from the
root: chance samples ``chance_probs``; a player still inside their tree
selects with SELECT; the first information state of a player outside their
tree is added (its action drawn from the uniform rollout policy) and that
player plays the rollout policy for the rest of the episode, so each tree
grows by at most one node per episode. At the end, every in-tree node on the
path (including the new one) gets UPDATE: ``N(u, a) += 1`` and ``Q(u, a)``
moves to the running mean of the player's return.

SELECT (Sec. 3.2, Algorithm 2): with probability
``eta_k = max(gamma, eta / (1 + d sqrt(N(u))))`` (Eq. 2) the UCB1 choice
``argmax_a Q(u, a) + c sqrt(log N(u) / N(u, a))`` (untried actions first, ties
uniformly at random), otherwise an action drawn from the average strategy
``N(u, a) / N(u)``; the walk (:func:`jaxgt.solvers.walk.walk`) draws the
action in one go from that mixture, ``eta_k UCB + (1 - eta_k) N(u, .) /
N(u)``. Plain UCT is ``eta_k = 1``. The average strategy of both
methods is the normalised visit counts (Sec. 3.2), uniform where unvisited.

Batches: one *step* runs ``batch`` episodes in parallel (``vmap``-style array
code); they all read the statistics at the start of the step and their
updates are summed (a new node added by several of them is added once). At
``batch=1`` a step is exactly one episode of Algorithm 1 (tested against a
sequential reference). With ``batch > 1`` the episodes of a step read
statistics that are stale within the step, so it is *not* Algorithm 1: a
faster approximation. The reproduction of the paper's figures
(``examples/smooth_uct_kuhn.py``) runs at ``batch=1``.

Paper constants (Sec. 4.1-4.2), also in :data:`PAPER_CONSTANTS`:

=============  =========  ==============================================
game           UCT ``c``  Smooth UCT
=============  =========  ==============================================
Kuhn poker     2          ``c=1.75, gamma=0.1, eta=0.9, d=0.001``
Leduc hold'em  20         ``c=18, gamma=0.1, eta=0.9, d=0.002``
=============  =========  ==============================================

The factory defaults are the Kuhn constants. Note the paper's exploitability
(Sec. 4.2) is NashConv; jaxgt's ``exploitability`` is NashConv / 2.

Device games (:class:`~jaxgt.solvers.sources.Rules`, for games too large to
enumerate, e.g. limit hold'em): ``solver.init(Rules(game[, abstraction]),
capacity=N)`` keeps ``N`` rows ``[N, A]`` of ``N`` and ``Q`` per player and
each player's :class:`~jaxgt.core.info_table.InfoTable` of information-state
keys (``state.tables``). An information state is *in the tree* once it has a
row: the walk looks each state's key up; a state without a row is the
player's newly added node (rollout from there on), and after the episode its
key is inserted and its row updated. When a player's table is full the insert
is refused (counted in ``tables[p].refused``): that information state stays
outside the tree, so the player plays the uniform rollout policy from there on
in every episode that reaches it, and nothing is recorded for it. Each
episode adds at most one row per player, so any ``capacity >= 1`` runs. With
an abstraction (``Rules(game, abstraction)``) the tables hold
``abstraction.key(game, state, player)``, so every information state with one
abstract key shares one row (the paper's card-bucketed hold'em, Sec. 4.3;
with imperfect recall a player may meet one row twice in an episode, and both
visits are updated). On an enumerable game, the run on ``Rules(game)`` with
enough capacity equals the run on ``compiled.device_tree()`` with the same
key, row for row (:func:`~jaxgt.solvers.sources.tree_rows`).

Exploration schedule (Sec. 4.3, Eq. 3, ``c = min(C, pot + k * remaining
betting potential)``): ``exploration``, a function of one device game state
returning UCB1's ``c`` there (float ``[]``), replaces the constant ``c`` on
device games; it is evaluated at each node where a player selects. The paper
sets ``c`` once per betting round, so a schedule reads the pot and potential at
the start of the state's round (e.g. hold'em's
``functools.partial(jaxgt.games.holdem_exploration.exploration_constant, C=24, k=0.5)``).

:func:`table_policy` exports the average or greedy strategy of a device-game
run as ``{information-state string: probabilities [A]}`` on the host, and
:func:`device_policy` serves it as a batched device function ``policy(states,
player) -> [B, A]``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.core import info_table, rng, sequence_form
from jaxgt.core.checks import check_positive_int, check_real
from jaxgt.core.game_tree import GameTree
from jaxgt.core.dtypes import dtype_name, resolve_dtype
from jaxgt.core.sampling import mix_uniform
from jaxgt.core.tables import infostate_rows
from jaxgt.solvers.sampled import SampledSolver, check_state_fits
from jaxgt.solvers.sources import Rules, memory_estimate, source_of
from jaxgt.solvers.walk import Draw, walk

PAPER_CONSTANTS = {
    "uct": {"kuhn_poker": {"c": 2.0}, "leduc_poker": {"c": 20.0}},
    "smooth-uct": {
        "kuhn_poker": {"c": 1.75, "gamma": 0.1, "eta": 0.9, "d": 0.001},
        "leduc_poker": {"c": 18.0, "gamma": 0.1, "eta": 0.9, "d": 0.002},
    },
}


@struct.dataclass
class UCTState:
  """State of one (Smooth) UCT self-play run.

  On a compiled tree the rows are its information states (``I_p``); on a device game they are
  the rows of the players' tables (``N = capacity`` each; rows past ``tables[p].size``
  unused)."""

  # ([I0, A], [I1, A]) int32 action visit counts N(u, a); N(u) > 0 marks the information states in
  # each player's tree
  visits: tuple
  values: tuple  # ([I0, A], [I1, A]) mean return Q(u, a) of the player to act
  iteration: jax.Array  # [] int32 steps run (batch episodes each)
  tables: Any = None  # (InfoTable, InfoTable) each row's information-state key (device games)

  def in_tree(self) -> tuple:
    """``([I0] bool, [I1] bool)``: information states in each player's search tree."""
    return tuple(jnp.sum(n, axis=-1) > 0 for n in self.visits)


@dataclasses.dataclass(frozen=True)
class UCTSolver(SampledSolver):
  """Hyperparameters of UCT / Smooth UCT self-play; methods are pure functions (:mod:`.base`)."""

  name: str  # "uct" | "smooth-uct"
  c: float  # UCB1 exploration constant
  gamma: float = 1.0  # gamma, eta, d: Smooth UCB mixing schedule (Eq. 2); unused by UCT
  eta: float = 1.0
  d: float = 0.0
  batch: int = 1  # episodes per step
  dtype: str = "float32"  # float dtype of Q
  # device games: UCB1's c at a node as a function of its state (float []); None: the constant c
  exploration: Callable | None = None

  @property
  def smooth(self) -> bool:
    return self.name == "smooth-uct"

  @property
  def samples_per_step(self) -> int:
    return self.batch

  def init(self, tree, *, weights=None, capacity=None) -> UCTState:
    """Empty trees (no visits); root beliefs (``weights``) are not supported.

    ``tree``: a compiled :class:`GameTree` (rows ``[I_p, A]``), or :class:`Rules` with
    ``capacity`` rows ``[capacity, A]`` per player (required, a positive integer: each
    episode adds at most one row per player) and empty tables.
    """
    if isinstance(tree, Rules):
      if weights is not None:
        raise ValueError(f"{self.name} does not support root beliefs (weights)")
      if capacity is None:
        raise ValueError(f"{self.name} on a device game needs capacity=N, the rows of each "
                         f"player's table (estimate the memory with memory_bytes)")
      capacity = check_positive_int("capacity", capacity)
      self._check_exploration(tree)
      dtype = resolve_dtype(self.dtype)
      shape = (capacity, tree.num_actions)
      return UCTState(visits=(jnp.zeros(shape, jnp.int32),) * 2,
                      values=(jnp.zeros(shape, dtype),) * 2,
                      iteration=jnp.zeros((), jnp.int32), tables=tree.empty_tables(capacity))
    if not isinstance(tree, GameTree):
      raise TypeError(f"{self.name} runs on a compiled GameTree or Rules(game), got "
                      f"{type(tree).__name__}")
    if capacity is not None:
      raise ValueError("capacity applies to a device game (Rules); a compiled tree keeps a row "
                       "per information state")
    self._check_exploration(tree)
    dtype = self.init_dtype(tree, weights)
    A = tree.num_actions
    visits = tuple(jnp.zeros((n, A), jnp.int32) for n in tree.num_infostates)
    values = tuple(jnp.zeros((n, A), dtype) for n in tree.num_infostates)
    return UCTState(visits=visits, values=values, iteration=jnp.zeros((), jnp.int32))

  def memory_bytes(self, rules: Rules, capacity: int) -> int:
    """Bytes of a device-game state of ``capacity`` rows per player: the tables' keys and
    slots, ``N`` (int32) and ``Q`` (``dtype``) ``[capacity, A]`` each."""
    if not isinstance(rules, Rules):
      raise TypeError(f"memory_bytes takes Rules(game), got {type(rules).__name__}")
    capacity = check_positive_int("capacity", capacity)
    row = rules.num_actions * (4 + jnp.dtype(resolve_dtype(self.dtype)).itemsize)
    return memory_estimate(rules, capacity, row)

  def _check_exploration(self, tree) -> None:
    """Refuses a state-dependent ``c`` on a compiled tree, or one that is not float ``[]`` at
    the device game's root (traced abstractly; nothing compiles)."""
    if self.exploration is None:
      return
    if not isinstance(tree, Rules):
      raise ValueError("an exploration schedule c(state) needs a device game (Rules); a "
                       "compiled tree has no states to evaluate it at")
    try:
      out = jax.eval_shape(self.exploration, tree.game.init())
    except Exception as e:  # the schedule's own failure, reported with what was asked
      raise TypeError(f"exploration(state) failed on a {tree.game.name} state: "
                      f"{type(e).__name__}: {e}") from e
    if getattr(out, "shape", None) != () or not jnp.issubdtype(out.dtype, jnp.number):
      raise TypeError(f"exploration(state) must return a real scalar [], got "
                      f"{getattr(out, 'dtype', type(out).__name__)} "
                      f"{getattr(out, 'shape', '')}")

  def run(self, tree, state, num_steps, key=None, **position):
    """``num_steps`` steps of ``batch`` episodes each (see :meth:`SampledSolver.run`); on a
    device game, ``state`` from ``init(Rules(...), capacity=...)`` for the same keys."""
    check_state_fits(tree, state, state.visits[0])
    self._check_exploration(tree)
    return super().run(tree, state, num_steps, key, **position)

  def sample_step(self, tree, state: UCTState, context, key) -> UCTState:
    """``batch`` episodes reading ``state``, their UPDATEs summed; on a device game the newly
    added information states are inserted into the tables first (refused: not updated)."""
    del context
    dtype = state.values[0].dtype
    src = source_of(tree, state.tables, dtype)
    uni = rng.uniform(key, (src.max_depth, self.batch), dtype)
    traj, _ = walk(src, uct_node_policy(self, state.visits, state.values), uni,
                   carry=jnp.zeros((self.batch, 2), bool))
    upd, rows, tables = traj.record, traj.infostate, state.tables
    if tables is not None:
      tables, rows = _insert_new(tables, traj, upd & (rows < 0), rows)
      upd = upd & (rows >= 0)
    visits, values = _update(state.visits, state.values, jnp.where(upd, traj.player, -1),
                             jnp.where(upd, rows, 0), jnp.minimum(traj.action, src.num_actions - 1),
                             traj.payoff())
    return state.replace(visits=visits, values=values, tables=tables)

  def average_policy(self, tree, state: UCTState):
    """Normalised visit counts ``N(u, a) / N(u)`` (``[I_p, A]`` or ``[N, A]`` each): uniform
    outside the tree on a compiled tree; zero on a device game's unused rows."""
    dtype = state.values[0].dtype
    if state.tables is not None:
      return tuple(_normalized(n.astype(dtype)) for n in state.visits)
    return tuple(sequence_form.normalize(n.astype(dtype), jnp.asarray(pt.legal))
                 for n, pt in zip(state.visits, tree.players))

  def greedy_policy(self, tree, state: UCTState):
    """Deterministic ``argmax_a Q(u, a)`` over visited actions (Sec. 4.3's greedy profile);
    a compiled tree's unvisited states take their first legal action, a device game's unused
    rows are zero."""
    if state.tables is not None:
      return tuple(_greedy(n, q) for n, q in zip(state.visits, state.values))
    out = []
    for n, q, pt in zip(state.visits, state.values, tree.players):
      legal = jnp.asarray(pt.legal)
      score = jnp.where(legal & (n > 0), q, -jnp.inf)
      score = jnp.where(jnp.any(n > 0, axis=-1, keepdims=True), score,
                        jnp.where(legal, 0.0, -jnp.inf))
      out.append(jax.nn.one_hot(jnp.argmax(score, axis=-1), tree.num_actions, dtype=q.dtype))
    return tuple(out)

  def mixing(self, visits_total, dtype=jnp.float32):
    """``eta_k`` of Eq. 2 at total node visits ``N(u)`` (``1`` for UCT), in ``dtype``."""
    if not self.smooth:
      return jnp.ones_like(jnp.asarray(visits_total, dtype))
    n = jnp.asarray(visits_total, dtype)
    return jnp.maximum(self.gamma, self.eta / (1.0 + self.d * jnp.sqrt(n)))


def _insert_new(tables, traj, new, rows):
  """Inserts the newly added information states ``new [D, B]`` (at most one per player and
  episode) into the tables; returns ``(tables, rows [D, B])`` with their rows in place
  (-1 where refused). One lane per player and episode, not ``D x B``."""
  lanes = jnp.arange(new.shape[1])
  steps = jnp.arange(new.shape[0])[:, None]
  out = []
  for p, table in enumerate(tables):
    mine = new & (traj.player == p)
    at = jnp.argmax(mine, axis=0)  # [B] the step of the player's new state
    table, got = info_table.insert(table, traj.key[at, lanes], jnp.any(mine, axis=0))
    rows = jnp.where(mine & (steps == at), got, rows)
    out.append(table)
  return tuple(out), rows


def _normalized(n):
  """``n / sum(n)`` along the last axis; zero where the sum is zero."""
  total = jnp.sum(n, axis=-1, keepdims=True)
  return n / jnp.where(total > 0, total, 1)


def _greedy(n, q):
  """One-hot ``argmax_a Q(u, a)`` over the visited actions ``[..., A]`` (ties: the first);
  zero where nothing was visited."""
  score = jnp.where(n > 0, q, -jnp.inf)
  hot = jax.nn.one_hot(jnp.argmax(score, axis=-1), n.shape[-1], dtype=q.dtype)
  return jnp.where(jnp.any(n > 0, axis=-1, keepdims=True), hot, 0)


def uct_node_policy(cfg: UCTSolver, visits, values):
  """The (Smooth) UCT node policy (a :func:`~jaxgt.solvers.walk.walk` callback; sampling = target).

  Carry ``out [B, 2]``: each player has left their tree. A player inside
  their tree at a visited node SELECTs (``eta_k`` UCB1 with uniform ties,
  ``1 - eta_k`` average strategy); at their first unvisited node (added to
  the tree; on a device game, a state without a table row) and afterwards
  they play the uniform rollout policy. Records ``updated [B]``: the node
  gets UPDATE (SELECT or the newly added node). UCB1's ``c`` is
  ``cfg.exploration(state)`` at the node where given, else ``cfg.c``.
  """

  def node_policy(t, node, out):
    del t
    pl, info, legal = node.player, node.infostate, node.legal
    dtype = values[0].dtype
    # A device game's state outside memory has no row (infostate NO_INDEX): not visited.
    n = jnp.where((info >= 0)[:, None], infostate_rows(visits, pl, info), 0)
    q = infostate_rows(values, pl, info)
    n_u = jnp.sum(n, axis=-1)
    mine_out = jnp.where(pl == 0, out[:, 0], out[:, 1])
    select = node.decision & ~mine_out & (n_u > 0)
    expand = node.decision & ~mine_out & (n_u == 0)
    if cfg.exploration is None:
      c = cfg.c
    else:
      c = jax.vmap(cfg.exploration)(node.history).astype(dtype)[:, None]
    # UCB1; untried legal actions score +inf; ties uniformly at random.
    nf = n.astype(dtype)
    bonus = c * jnp.sqrt(jnp.log(jnp.maximum(n_u, 1).astype(dtype))[:, None]
                         / jnp.maximum(nf, 1.0))
    score = jnp.where(n > 0, q + bonus, jnp.inf)
    score = jnp.where(legal, score, -jnp.inf)
    # The maximisers, up to rounding: XLA may evaluate `score` once for the max and again for
    # this comparison, in different fusions whose FMA contraction differs in the last bit, and
    # then no action would equal the max (UCB1's share of the draw lost); A ulps of |top| are a
    # tie (the untried actions' +inf compare exactly).
    top = jnp.max(score, axis=-1, keepdims=True)
    slack = score.shape[-1] * jnp.finfo(dtype).eps * jnp.abs(top)
    best = legal & jnp.where(jnp.isinf(top), score == top, score >= top - slack)
    sel = best / jnp.maximum(jnp.sum(best, axis=-1, keepdims=True), 1).astype(dtype)
    if cfg.smooth:
      eta_k = cfg.mixing(n_u, dtype)[:, None]
      sel = eta_k * sel + (1.0 - eta_k) * sequence_form.normalize(nf, legal)
    roll = mix_uniform(jnp.zeros_like(sel), legal, 1.0)
    sample = jnp.where(select[:, None], sel, roll)
    out = out | (expand[:, None] & (jnp.arange(2) == pl[:, None]))
    return Draw(sample=sample, target=sample, record=select | expand), out

  return node_policy


def _update(visits, values, rec_pl, rec_info, rec_act, ret):
  """UPDATE of Algorithm 1 for every recorded node ``[D, B]`` (``rec_pl = -1``: none), summed over the batch.

  Sparse: only the recorded ``(u, a)`` entries are read and written (scatter
  adds), so a step costs O(batch x depth), not O(I x A). Records of the same
  entry in one batch add ``(r - Q) / N_new`` each, i.e. ``Q`` moves to the
  mean over all its returns so far.
  """
  visits, values = list(visits), list(values)
  i = rec_info.reshape(-1)
  a = rec_act.reshape(-1)
  for p in (0, 1):
    mine = (rec_pl == p).reshape(-1)
    r = jnp.broadcast_to(ret if p == 0 else -ret, rec_pl.shape).reshape(-1)
    n_new = visits[p].at[i, a].add(mine.astype(jnp.int32))
    q = values[p]
    step = (r - q[i, a]) / jnp.maximum(n_new[i, a], 1).astype(q.dtype)
    values[p] = q.at[i, a].add(jnp.where(mine, step, 0.0).astype(q.dtype))
    visits[p] = n_new
  return tuple(visits), tuple(values)


def _callable_or_none(exploration):
  if exploration is not None and not callable(exploration):
    raise TypeError(f"exploration must be a function of a device game state returning UCB1's c "
                    f"there, or None; got {type(exploration).__name__}")
  return exploration


def uct(c: float = 2.0, *, batch: int = 1, dtype="float32",
        exploration: Callable | None = None) -> UCTSolver:
  """Extensive-form UCT self-play (Sec. 3.1); ``c=2`` for Kuhn, ``c=20`` for Leduc (Sec. 4).

  ``exploration``: on device games, UCB1's ``c`` as a function of the node's state (float
  ``[]``, e.g. the paper's Eq. 3 for hold'em) in place of ``c``.
  """
  return UCTSolver("uct", c=check_real("c", c, 0, hi_open=True),
                   batch=check_positive_int("batch", batch), dtype=dtype_name(dtype),
                   exploration=_callable_or_none(exploration))


def smooth_uct(c: float = 1.75, gamma: float = 0.1, eta: float = 0.9, d: float = 0.001, *,
               batch: int = 1, dtype="float32",
               exploration: Callable | None = None) -> UCTSolver:
  """Extensive-form Smooth UCT self-play (Sec. 3.2, Algorithm 2).

  Defaults are the Kuhn constants (Sec. 4.1); Leduc uses ``c=18, d=0.002``
  (Sec. 4.2; see :func:`for_game`); hold'em ``gamma=0.1, eta=0.9, d=1/20000`` with
  ``exploration`` Eq. 3 (``C=24, k=0.5``, Sec. 4.3).
  """
  return UCTSolver("smooth-uct",
                   c=check_real("c", c, 0, hi_open=True),
                   gamma=check_real("gamma", gamma, 0, 1, lo_open=True),
                   eta=check_real("eta", eta, 0, 1, lo_open=True),
                   d=check_real("d", d, 0, hi_open=True),
                   batch=check_positive_int("batch", batch), dtype=dtype_name(dtype),
                   exploration=_callable_or_none(exploration))


def for_game(name: str, game: str, **kwargs) -> UCTSolver:
  """``uct`` or ``smooth-uct`` with the paper's constants for ``kuhn_poker`` / ``leduc_poker``."""
  if name not in PAPER_CONSTANTS:
    raise ValueError(f"unknown solver {name!r}; choose one of {', '.join(PAPER_CONSTANTS)}")
  if game not in PAPER_CONSTANTS[name]:
    raise ValueError(f"the paper gives no constants for {game!r}; choose one of "
                     f"{', '.join(PAPER_CONSTANTS[name])} or pass them explicitly")
  factory = uct if name == "uct" else smooth_uct
  return factory(**{**PAPER_CONSTANTS[name][game], **kwargs})


POLICIES = ("average", "greedy")


def _policy_rows(rules, state: UCTState, which: str):
  """Per player ``[N, A]`` rows of the ``which`` strategy of a device-game run (checked)."""
  if which not in POLICIES:
    raise ValueError(f"which must be one of {', '.join(POLICIES)}, got {which!r}")
  if not isinstance(rules, Rules):
    raise TypeError(f"expected Rules(game), got {type(rules).__name__}")
  if not isinstance(state, UCTState) or state.tables is None:
    raise ValueError("expected the UCTState of a run on Rules(game) (with tables)")
  if state.tables[0].width != rules.key_width:
    raise ValueError(f"the state's keys have {state.tables[0].width} words, the rules "
                     f"{rules.key_width}: another game or abstraction")
  dtype = state.values[0].dtype
  if which == "average":
    return tuple(_normalized(n.astype(dtype)) for n in state.visits)
  return tuple(_greedy(n, q) for n, q in zip(state.visits, state.values))


def key_name(rules: Rules, key, player: int) -> str:
  """The host name of ``player``'s table key ``[W]``: the game's information-state string
  (OpenSpiel's where the game mirrors one), or the abstraction's ``key_string`` (else
  ``"player p: k0 k1 ..."``)."""
  if rules.abstraction is None:
    return rules.game.info_string(key, player)
  named = getattr(rules.abstraction, "key_string", None)
  if named is not None:
    return named(key, player)
  return f"player {player}: " + " ".join(str(int(k)) for k in np.asarray(key).reshape(-1))


def table_policy(rules: Rules, state: UCTState, which: str = "average") -> dict:
  """``{information-state name: probabilities [A]}`` (NumPy) of every information state in a
  device-game run's tables, both players, names by :func:`key_name`: the average strategy
  ``N(u, a) / N(u)`` or the greedy one (one-hot ``argmax_a Q(u, a)`` over visited actions).

  States not in the tables are absent (the rollout policy, uniform over the legal actions,
  plays there). With an abstraction that merges states with different legal actions, a
  state's probabilities are its row restricted to its legal actions, renormalised (what
  :func:`device_policy` serves).
  """
  rows = _policy_rows(rules, state, which)
  out = {}
  for p, (t, probs) in enumerate(zip(state.tables, rows)):
    keys = info_table.host_keys(t)
    probs = np.asarray(probs)[:len(keys)]
    for k, row in zip(keys, probs):
      name = key_name(rules, k, p)
      if name in out:
        raise ValueError(f"two information states are both named {name!r}")
      out[name] = row
  return out


def device_policy(rules: Rules, state: UCTState, which: str = "average"):
  """The ``which`` strategy of a device-game run as a batched device function
  ``policy(states, player) -> probs [B, A]`` (``states`` with a leading axis ``B``, ``player``
  a Python int): the row of the player's key restricted to the state's legal actions and
  renormalised; uniform over the legal actions where the key has no row (the rollout
  policy) or the row has no mass on them."""
  rows = _policy_rows(rules, state, which)
  tables = state.tables
  game = rules.game

  def policy(states, player):
    p = int(player)
    keys = jax.vmap(lambda s: rules.info_key(s, p))(states)
    row = info_table.lookup(tables[p], keys)
    legal = jax.vmap(game.legal_mask)(states)
    probs = jnp.where(legal & (row >= 0)[:, None], rows[p][jnp.maximum(row, 0)], 0.0)
    uniform = sequence_form.uniform(legal, probs.dtype)
    return _normalized(probs) + jnp.where(jnp.sum(probs, -1, keepdims=True) > 0, 0.0, uniform)

  return policy
