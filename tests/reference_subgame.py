"""Reference implementation for the tests: host-extracted subgames (the library's re-solving
path before it moved to the device tree, :mod:`jaxgt.search.subgame`), an independent oracle.

Depth-limited subgames cut out of a compiled game at public states
(Brown et al. 2018; Schmid et al. 2023, Sec. 3).

A subgame, rooted at public states and cut at *leaf* public states, is an
ordinary :class:`~jaxgt.core.game_tree.GameTree` assembled from the full game's
arrays (:func:`jaxgt.core.compiler.assemble`): a root chance node over the
root histories, the histories below, and every leaf history a terminal whose
payoff (player 0's value) is supplied per solve. Root ranges enter as
terminal weights ``pi_chance(h) r0(I0(h)) r1(I1(h))``, so one compilation
serves any number of them. Shape letters: ``T`` subgame terminals, ``L`` leaf
histories, ``R`` root histories, ``B`` batch of root ranges.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from jaxgt.core.checks import check_distribution, check_nonnegative_int, check_positive_int
from jaxgt.core.compiler import assemble
from jaxgt.core.game_tree import CompiledGame, ancestor_at_depth, first_seen_ids
from jaxgt.games.base import CHANCE, TERMINAL, Game
from jaxgt.core.public_tree import PublicTree, build_public_tree

_ROOT = "root"
_DUMMY = "no-decision"  # see extract(): a one-action node for a player without decisions
_LEAF_CHOICE = "|leaf-choice"  # suffix of a chooser's information state at a leaf


class SubgameDefinition(Game):
  """Names a subgame compiled by :func:`extract` (enters its fingerprint); it has no states."""

  name = "subgame"

  def __init__(self, label: str, choices: int, num_actions: int):
    super().__init__(of=label, choices=choices)
    self.num_actions = num_actions

  def _no_states(self, *args):
    raise NotImplementedError("a subgame is assembled from the full game's arrays; walk "
                              "Subgame.tree or the full game instead")

  initial_state = current_player = legal_actions = next_state = returns = _no_states
  information_state = public_state = _no_states

  def game_string(self):
    return f"subgame({self.params['of']})"


@dataclasses.dataclass(frozen=True, eq=False)
class Subgame:
  """A compiled depth-limited subgame and its links to the full game."""

  full: PublicTree  # the :class:`PublicTree` of the full game
  compiled: CompiledGame  # the subgame as a :class:`CompiledGame` (its tree is what solvers run on)
  root_public: tuple  # root public states (full-game indices)
  leaf_public: tuple  # leaf public states (full-game indices), sorted
  root_histories: np.ndarray  # [R] full-game root histories
  history_of: np.ndarray  # [H_sub] full-game history of each subgame history (-1 at the added root)
  terminal_leaf: np.ndarray  # [T] int32 leaf index 0..L-1 of each terminal, -1 for a real one
  leaf_histories: np.ndarray  # [L] full-game leaf histories
  base_payoff: np.ndarray  # [T] payoffs with zeros at leaves
  chance_below_root: np.ndarray  # [T] chance reach of each terminal below its root history
  terminal_root: np.ndarray  # [T] root index of each terminal
  root_aug: np.ndarray  # [2, R] position of each root history's infostate in the root ranges
  full_infostate: tuple  # per player, [I_sub] full-game infostate (-1 for the added node)
  root_index: int = 0  # the root chance node (1 below a player-without-decisions node)
  leaf_choices: int = 0  # K continuation strategies per leaf (0: single-valued)
  leaf_nodes: np.ndarray | None = None  # [L] subgame history of each leaf

  @property
  def tree(self):
    return self.compiled.tree

  @property
  def num_leaves(self) -> int:
    return len(self.leaf_histories)

  def range_sizes(self) -> tuple[int, int]:
    return tuple(sum(len(self.full.infostates[p][ps]) for ps in self.root_public) for p in (0, 1))

  def root_weights(self, range0, range1, dtype=jnp.float64) -> jnp.ndarray:
    """Terminal weights ``[T]`` (``[B, T]``) for root ranges ``[K0]``, ``[K1]`` (``[B, K]``),
    concatenated in ``root_public`` order."""
    rs = [self.check_ranges(p, r) for p, r in enumerate((range0, range1))]
    if rs[0].shape[:-1] != rs[1].shape[:-1]:
      raise ValueError(f"batch shapes of the two ranges differ: {rs[0].shape} vs {rs[1].shape}")
    hist_w = (self.full.chance_reach[self.root_histories] * rs[0][..., self.root_aug[0]]
              * rs[1][..., self.root_aug[1]])
    return jnp.asarray(self.chance_below_root * hist_w[..., self.terminal_root], dtype)

  def check_ranges(self, p: int, r) -> np.ndarray:
    """Player ``p``'s root range ``[K]`` or ``[B, K]`` validated (each block a distribution)."""
    r = np.asarray(r, np.float64)
    K = self.range_sizes()[p]
    if r.ndim not in (1, 2) or r.shape[-1] != K:
      raise ValueError(f"range of player {p} must have shape [{K}] or [B, {K}] (information "
                       f"states of the root public states), got {r.shape}")
    off = 0
    for ps in self.root_public:
      k = len(self.full.infostates[p][ps])
      check_distribution(f"range of player {p} at public state {ps}", r[..., off:off + k], k)
      off += k
    return r

  def payoff(self, leaf_values) -> jnp.ndarray:
    """Terminal payoffs ``[..., T]`` with leaf values ``[..., L]`` (``[..., L, K]``
    with ``K`` leaf choices; player 0's utility) filled in."""
    leaf_values = jnp.asarray(leaf_values)
    K = self.leaf_choices
    want = (self.num_leaves, K) if K else (self.num_leaves,)
    if leaf_values.shape[-len(want):] != want or leaf_values.ndim < len(want):
      raise ValueError(f"leaf values must have shape [..., {', '.join(map(str, want))}] "
                       f"(one per leaf history{' and choice' if K else ''}), "
                       f"got {leaf_values.shape}")
    if K:
      leaf_values = leaf_values.reshape(leaf_values.shape[:-2] + (-1,))
    base = jnp.asarray(self.base_payoff, leaf_values.dtype)
    if not self.num_leaves:  # nothing to fill in (gathering from an empty axis fails)
      return jnp.broadcast_to(base, leaf_values.shape[:-1] + base.shape)
    idx = jnp.asarray(np.maximum(self.terminal_leaf, 0))
    return jnp.where(jnp.asarray(self.terminal_leaf >= 0), leaf_values[..., idx], base)

  def root_of(self, nodes) -> np.ndarray:
    """``[N] int32`` root index (into ``root_histories``) above each subgame history."""
    return _root_of(self.tree, self.root_index, nodes)

  def root_children(self) -> np.ndarray:
    """``[R]`` subgame history of each root history."""
    return np.asarray(self.tree.children)[self.root_index, :len(self.root_histories)]

  def with_payoff(self, tree, leaf_values):
    """``tree`` (the subgame's device tree) with leaf values filled in."""
    return tree.replace(terminal_payoff=self.payoff(leaf_values).astype(tree.terminal_payoff.dtype))

  def to_full_policy(self, sub_policy, full_policy):
    """``full_policy`` with the subgame's information states replaced by ``sub_policy``."""
    out = []
    for p in (0, 1):
      m = np.flatnonzero(self.full_infostate[p] >= 0)
      idx = jnp.asarray(self.full_infostate[p][m])
      A = jnp.asarray(full_policy[p]).shape[-1]
      out.append(jnp.asarray(full_policy[p]).at[idx].set(jnp.asarray(sub_policy[p])[m, :A]))
    return tuple(out)


def roots_and_leaves(pt: PublicTree, root, depth_limit, leaves) -> tuple:
  """``(root public states, [P] bool leaf public states)`` of :func:`extract`, checked."""
  roots_ps = root if isinstance(root, (list, tuple, np.ndarray)) and not (
      isinstance(root, tuple) and root in pt.game.public_index()) else [root]
  roots_ps = tuple(pt.public_id(r) for r in roots_ps)
  if len(set(roots_ps)) != len(roots_ps):
    raise ValueError("repeated root public state")
  P = pt.num_public_states
  leaf_mask = np.zeros(P, bool)
  if leaves is not None:
    for l in leaves:
      leaf_mask[pt.public_id(l)] = True
  elif depth_limit is not None:
    check_positive_int("depth_limit", depth_limit)
    every = np.arange(P)
    for r in roots_ps:
      below_r = ancestor_at_depth(pt.parent, pt.depth, every, pt.depth[r]) == r
      leaf_mask[(pt.depth == pt.depth[r] + depth_limit) & below_r] = True
  leaf_mask &= ~pt.terminal_public
  for r in roots_ps:
    if pt.terminal_public[r]:
      raise ValueError(f"root public state {r} is terminal")
    leaf_mask[r] = False
  return roots_ps, leaf_mask


def extract(game: CompiledGame | PublicTree, root=0, *, depth_limit: int | None = None,
            leaves=None, leaf_choices: int = 0, chooser: int = 1) -> Subgame:
  """The subgame rooted at public state(s) ``root`` (index, key or a sequence of them).

  Leaves are the public states ``leaves``, or those ``depth_limit`` levels
  below a root (neither: no cut); all-terminal leaf public states stay terminals.

  Multi-valued states (Brown et al. 2018, Sec. 4): with ``leaf_choices = K > 0`` player
  ``chooser`` picks one of ``K`` continuations at each leaf (leaf values ``[L, K]``).
  """
  K = check_nonnegative_int("leaf_choices", leaf_choices)
  if chooser not in (0, 1):
    raise ValueError(f"chooser must be 0 or 1, got {chooser!r}")
  pt = build_public_tree(game)
  t = pt.game.tree
  roots_ps, leaf_mask = roots_and_leaves(pt, root, depth_limit, leaves)
  roots_h = np.concatenate([hs[~np.isin(t.parent[hs], hs)]
                            for hs in (pt.histories[r] for r in roots_ps)]).astype(np.int32)
  if np.any(t.player[roots_h] == TERMINAL):
    raise ValueError(f"a root public state of {roots_ps} holds terminal histories")
  cr = pt.chance_reach[roots_h]
  label = f"{pt.game.name}@{','.join(map(str, roots_ps))}"
  nodes = _enumerate(t, roots_h, leaf_mask, K)
  # A player without decisions gets a single-action node above the root (changes no value).
  acting = set(np.unique(nodes["player"][nodes["player"] >= 0]).tolist()) | (
      {chooser} if K else set())
  dummy = next((p for p in (0, 1) if p not in acting), None)
  top = 0 if dummy is None else 1  # index of the root chance node
  sub = _assemble_subgame(pt, nodes, roots_h, cr / cr.sum(), leaf_mask, label, dummy, K, chooser)
  st = sub.tree
  H = st.num_histories
  hist_of = np.concatenate([np.full(top + 1, -1, np.int64), nodes["hist"]])
  choice = np.concatenate([np.full(top + 1, -1, np.int64), nodes["choice"]])
  node_leaf = np.concatenate([np.zeros(top + 1, bool),
                              nodes["leaf"] & (t.player[nodes["hist"]] != TERMINAL)])
  leaf_nodes = np.flatnonzero(node_leaf)
  leaf_hist = hist_of[leaf_nodes]
  leaf_of_node = np.full(H, -1, np.int64)
  leaf_of_node[leaf_nodes] = np.arange(len(leaf_nodes))
  z = np.asarray(st.terminal_history)
  is_leaf = choice[z] >= 0 if K else node_leaf[z]
  leaf_z = leaf_of_node[st.parent[z]] * K + choice[z] if K else leaf_of_node[z]
  terminal_leaf = np.where(is_leaf, leaf_z, -1).astype(np.int32)
  terminal_root = _root_of(st, top, z)
  below = st.terminal_chance / (cr / cr.sum())[terminal_root]
  root_aug = np.zeros((2, len(roots_h)), np.int32)
  full_info = []
  for p in (0, 1):
    ids = np.concatenate([pt.infostates[p][ps] for ps in roots_ps])
    pos = np.full(len(pt.aug_keys[p]), -1, np.int64)
    pos[ids] = np.arange(len(ids))
    root_aug[p] = pos[pt.aug[p][roots_h]]
    idx = pt.game.infostate_index(p)
    full_info.append(np.asarray([idx.get(k, -1) for k in sub.infostate_keys[p]], np.int32))
  return Subgame(full=pt, compiled=sub, root_public=roots_ps,
                 leaf_public=tuple(int(x) for x in np.flatnonzero(leaf_mask)),
                 root_histories=roots_h, history_of=hist_of, terminal_leaf=terminal_leaf,
                 leaf_histories=leaf_hist.astype(np.int32),
                 base_payoff=np.where(is_leaf, 0.0, st.terminal_payoff),
                 chance_below_root=below, terminal_root=terminal_root, root_aug=root_aug,
                 full_infostate=tuple(full_info), root_index=top,
                 leaf_choices=K, leaf_nodes=leaf_nodes.astype(np.int32))


def _root_of(tree, root_index: int, nodes) -> np.ndarray:
  """Root index above subgame histories: the outcome of the root chance node on their path."""
  top = ancestor_at_depth(tree.parent, tree.depth, np.asarray(nodes), tree.depth[root_index] + 1)
  return np.asarray(tree.action)[top].astype(np.int32)


def _enumerate(t, roots_h, leaf_mask, K: int) -> dict:
  """Breadth-first enumeration of the subgame below its root chance node, from arrays.

  A leaf history is a terminal, or (``K > 0``) a node with ``K`` terminal choices. Per node
  (root excluded): ``hist``, ``choice`` (``-1`` or the choice below a leaf), ``parent`` (``-1``:
  the root), ``action``, ``player``, ``leaf`` (in a leaf public state).
  """
  C = t.children.shape[1]
  W = max(C, K)
  hist, choice, parent, action = [roots_h.astype(np.int64)], [np.full(len(roots_h), -1)], \
      [np.full(len(roots_h), -1)], [np.arange(len(roots_h))]
  lo = 0
  while len(hist[-1]):
    h, ch = hist[-1], choice[-1]
    n = len(h)
    real = ch < 0
    leaf = real & leaf_mask[t.history_public[h]]
    expand = np.flatnonzero(real & ~leaf & (t.player[h] != TERMINAL))
    kid_h = np.full((n, W), -1, np.int64)
    kid_c = np.full((n, W), -1, np.int64)
    kid_h[expand, :C] = t.children[h[expand]]
    valid = kid_h >= 0
    if K:
      choose = np.flatnonzero(leaf)
      kid_h[choose, :K] = h[choose, None]
      kid_c[choose, :K] = np.arange(K)
      valid[choose, :K] = True
    rows, cols = np.nonzero(valid)  # row-major: parents in order, actions increasing
    hist.append(kid_h[rows, cols])
    choice.append(kid_c[rows, cols])
    parent.append(lo + rows)
    action.append(cols)
    lo += n
  out = {k: np.concatenate(v).astype(np.int64) for k, v in
         (("hist", hist), ("choice", choice), ("parent", parent), ("action", action))}
  h, ch = out["hist"], out["choice"]
  out["leaf"] = (ch < 0) & leaf_mask[t.history_public[h]]
  out["player"] = np.where(ch >= 0, TERMINAL, np.where(out["leaf"], TERMINAL, t.player[h]))
  return out


def _assemble_subgame(pt: PublicTree, nodes: dict, roots_h, root_probs, leaf_mask, label: str,
                      dummy, K: int, chooser: int) -> CompiledGame:
  """The subgame's :class:`CompiledGame` from the enumerated nodes (:func:`compiler.assemble`).

  Prepends ``dummy``'s one-action node (if any) and the root chance node; keys
  are the full game's, a leaf choice adds ``|leaf-choice``, a leaf public
  state becomes ``("leaf", s)`` and a chosen continuation ``("chosen", s)``.
  """
  game, t = pt.game, pt.game.tree
  P = pt.num_public_states
  top = 0 if dummy is None else 1
  hist, ch, leaf = nodes["hist"], nodes["choice"], nodes["leaf"]
  n = len(hist)
  choose = leaf & (K > 0)  # real histories where the chooser picks a continuation
  sub_player = np.where(choose, chooser, nodes["player"])
  player = np.concatenate([[dummy] * top + [CHANCE], sub_player]).astype(np.int32)
  head = [-1] + [0] * top  # parent and action of the head nodes
  parent = np.concatenate([head, np.where(nodes["parent"] < 0, top, nodes["parent"] + top + 1)])
  action = np.concatenate([head, nodes["action"]])
  par_full = np.where(nodes["parent"] < 0, -1, hist[np.maximum(nodes["parent"], 0)])
  from_chance = (nodes["parent"] >= 0) & (ch < 0)
  from_chance &= t.player[np.maximum(par_full, 0)] == CHANCE
  edge = np.where(nodes["parent"] < 0, root_probs[np.minimum(nodes["action"], len(roots_h) - 1)],
                  np.where(from_chance, t.chance_probs[np.maximum(par_full, 0),
                                                       nodes["action"] % t.children.shape[1]], 1.0))
  edge_prob = np.concatenate([[1.0] * (top + 1), edge])
  # Payoffs: real terminals keep theirs, leaves and chosen continuations get 0.
  real_term = (ch < 0) & ~leaf & (t.player[hist] == TERMINAL)
  payoff = np.zeros(top + 1 + n)
  payoff[top + 1:][real_term] = t.terminal_payoff[t.history_terminal[hist[real_term]]]
  hp = t.history_public[hist].astype(np.int64)
  pub_code = np.where(ch >= 0, 2 * P + hp, np.where(choose, P + hp, hp))
  pub_code = np.concatenate([[-2] * top + [-1], pub_code])
  public, first = first_seen_ids(pub_code)

  def public_key(code):
    code = int(code)
    if code < 0:
      return _DUMMY if code == -2 else _ROOT
    return code if code < P else (("leaf", "chosen")[code // P - 1], code % P)
  public_keys = tuple(public_key(c) for c in pub_code[first])
  infostate = np.full(len(player), -1, np.int32)
  aug = np.full((2, len(player)), -1, np.int32)
  infostate_keys, aug_keys = [], []
  head, body = np.arange(top + 1), np.flatnonzero(sub_player != TERMINAL)
  for p in (0, 1):
    K_aug, I = len(pt.aug_keys[p]), t.num_infostates[p]
    a = pt.aug[p][hist].astype(np.int64)
    a = np.where(a >= 0, a, K_aug)
    # A real decision keeps its infostate; a leaf choice is keyed by the chooser's augmented one.
    dec = np.flatnonzero(sub_player == p)
    pos, codes = dec + top + 1, np.where(choose, I + a, t.infostate[hist])[dec]
    if dummy == p:
      pos, codes = np.concatenate([[0], pos]), np.concatenate([[-1], codes])
    infostate[pos], first = first_seen_ids(codes)

    def info_key(code, p=p, I=I, K_aug=K_aug):
      if code < 0:
        return _DUMMY
      if code < I:
        return game.infostate_keys[p][code]
      a = code - I
      return (pt.aug_keys[p][a] if a < K_aug else "") + _LEAF_CHOICE
    infostate_keys.append([info_key(int(c)) for c in codes[first]])
    # Augmented information states at every non-terminal node.
    codes = np.concatenate([head - top - 2, np.where(choose, K_aug + 1 + a, a)[body]])
    aug[p, np.concatenate([head, body + top + 1])], first = first_seen_ids(codes)

    def aug_key(code, p=p, K_aug=K_aug):
      if code < 0:
        return _ROOT if code == -2 else _DUMMY
      a = code % (K_aug + 1)
      key = pt.aug_keys[p][a] if a < K_aug else ""
      return key + _LEAF_CHOICE if code > K_aug else key
    aug_keys.append([aug_key(int(c)) for c in codes[first]])
  A = max(t.num_actions, K)
  chance_kids = player[parent[1:]] == CHANCE
  C = max(A, int(action[1:][chance_kids].max()) + 1)
  return assemble(SubgameDefinition(label, K, A), parent=parent, action=action,
                  edge_prob=edge_prob, player=player, infostate=infostate,
                  infostate_keys=infostate_keys, public=public, public_keys=public_keys,
                  payoff=payoff, aug=aug, aug_keys=aug_keys, num_actions=A, num_outcomes=C)
