"""Conformance of a :class:`~jaxgt.games.device.DeviceGame` on sampled trajectories.

:func:`check_rules` plays ``n`` random trajectories in one jitted, vmapped
scan over ``max_length`` steps (players uniform over legal actions, chance by
its probabilities), records every visited state's player, legal mask, chance
probabilities, returns, keys and private states, and checks on the host:

- ``shapes``: every function's output shape and dtype as declared (``step``
  keeps the state's structure); checked first, on the root, without playing;
- ``players``: ``current_player`` is 0, 1, :data:`CHANCE` or :data:`TERMINAL`;
- ``chance_probabilities``: non-negative, summing to one (``PROB_ATOL``) at
  chance nodes, zero elsewhere;
- ``chance_sampler`` (games that define ``sample_chance``): at chance nodes, the
  outcomes ``sample_chance`` gives at :data:`SAMPLER_GRID` evenly spaced ``u`` in
  ``[0, 1)`` (the midpoints of equal parts) are in ``[0, C)``, have positive
  probability, and each outcome's share of the grid is within ``2 / SAMPLER_GRID``
  of its ``chance_probs`` (exact for a sampler whose outcomes take intervals of
  ``u``, as an inverse CDF in any outcome order does);
- ``legal_actions``: non-empty at decisions, empty at chance nodes and terminals;
- ``zero_sum``: finite returns with ``u0 + u1 == 0`` at terminals, zeros elsewhere;
- ``max_length``: every trajectory is over after ``max_length`` steps;
- ``perfect_recall``: at decisions, states with equal ``info_key(., p)`` have
  equal sequences of ``p``'s own (information state, action) pairs, and equal
  legal masks where ``p`` acts;
- ``public_states``: at decisions, equal ``info_key(., p)`` means equal ``public_key``.
  Both compare states where ``p`` acts with each other and states where the
  opponent acts with each other (as :func:`jaxgt.games.check` does on a
  Python game: a waiting player's information state is an augmented one);
- ``private_states`` (games with ``num_private``): ``private_index`` in
  ``[-1, K_p)`` (``[0, K_p)`` at decisions), ``private_chance`` non-negative and
  summing to one, positive on the trajectory's own private pair; where the game
  defines ``with_private``, another private state ``k`` of a dealt player gives a
  state whose ``private_index`` is ``k`` with the same public key and the same
  opponent information state;
- ``terminal_step``: ``step`` on a terminal returns it unchanged.

Sampling is a check, not a proof: a property broken only on histories no
trajectory visits goes unseen (the enumeration of :func:`jaxgt.compile_game`
checks the per-state properties on every history of an enumerable game).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.games.base import CHANCE, PROB_ATOL, TERMINAL
from jaxgt.games.device import DeviceGame, has_chance_sampler, key_codes

CHECKS = ("shapes", "players", "chance_probabilities", "chance_sampler", "legal_actions",
          "zero_sum", "max_length", "perfect_recall", "public_states", "private_states",
          "terminal_step")
MAX_REPORTED = 20
"""Failures listed per check (all are counted)."""
SAMPLER_GRID = 1024
"""Values of ``u`` at which ``sample_chance`` is read at each visited chance node."""
_CHUNK = 1024  # trajectories per jitted call (the last chunk padded)
_PRIVATE_CELLS = 1 << 12
"""Above this many private pairs (``K0 * K1``), ``private_chance`` is checked on a sample of the
visited states (:data:`_PRIVATE_BUDGET` cells in all), not at every step of the scan."""
_PRIVATE_BUDGET = 1 << 28


def checks_of(game: DeviceGame) -> list[str]:
  """The checks :func:`check_rules` runs on ``game`` (``private_states`` only where it declares
  ``num_private``, ``chance_sampler`` only where it defines ``sample_chance``)."""
  skip = {"private_states"} if game.num_private is None else set()
  if not has_chance_sampler(game):
    skip.add("chance_sampler")
  return [c for c in CHECKS if c not in skip]


def _expected_shapes(game: DeviceGame) -> dict:
  """``{function: (shape, dtype kind)}``: ``"i"`` int32, ``"b"`` bool, ``"f"`` any float,
  ``"f32"`` float32."""
  out = {"current_player": ((), "i"), "legal_mask": ((game.num_actions,), "b"),
         "chance_probs": ((game.num_outcomes,), "f"), "returns": ((2,), "f"),
         "info_key(0)": ((game.info_key_width,), "i"), "info_key(1)": ((game.info_key_width,), "i"),
         "public_key": ((game.public_key_width,), "i"),
         "info_features(0)": ((game.info_feature_size,), "f32"),
         "info_features(1)": ((game.info_feature_size,), "f32"),
         "public_features": ((game.public_feature_size,), "f32")}
  if game.num_private is not None:
    k0, k1 = game.num_private
    out.update({"private_index(0)": ((), "i"), "private_index(1)": ((), "i"),
                "private_chance": ((k0, k1), "f")})
  if has_chance_sampler(game):
    out["sample_chance"] = ((), "i")
  return out


def _functions(game: DeviceGame) -> dict:
  return {"current_player": game.current_player, "legal_mask": game.legal_mask,
          "chance_probs": game.chance_probs, "returns": game.returns,
          "info_key(0)": lambda s: game.info_key(s, 0),
          "info_key(1)": lambda s: game.info_key(s, 1), "public_key": game.public_key,
          "info_features(0)": lambda s: game.info_features(s, 0),
          "info_features(1)": lambda s: game.info_features(s, 1),
          "public_features": game.public_features,
          "private_index(0)": lambda s: game.private_index(s, 0),
          "private_index(1)": lambda s: game.private_index(s, 1),
          "private_chance": game.private_chance,
          "sample_chance": lambda s: game.sample_chance(s, jnp.float32(0.5))}


def _shape_failures(game: DeviceGame) -> list[str]:
  """Messages for each function whose output on the root is not shaped as declared."""
  bad = []
  state = jax.eval_shape(game.init)
  fns = _functions(game)
  for name, (shape, kind) in _expected_shapes(game).items():
    try:
      got = jax.eval_shape(fns[name], state)
    except NotImplementedError:
      if "features" in name:
        continue  # features are optional
      raise
    ok = {"i": got.dtype == jnp.int32, "b": got.dtype == jnp.bool_,
          "f": jnp.issubdtype(got.dtype, jnp.floating),
          "f32": got.dtype == jnp.float32}[kind]
    if tuple(got.shape) != shape or not ok:
      want = {"i": "int32", "b": "bool", "f": "float", "f32": "float32"}[kind]
      bad.append(f"{name} gives {got.dtype}{list(got.shape)}, declared {want}{list(shape)}")
  after = jax.eval_shape(game.step, state, jax.ShapeDtypeStruct((), jnp.int32))
  same = jax.tree_util.tree_structure(after) == jax.tree_util.tree_structure(state) and all(
      a.shape == b.shape and a.dtype == b.dtype
      for a, b in zip(jax.tree_util.tree_leaves(after), jax.tree_util.tree_leaves(state)))
  if not same:
    bad.append("step changes the state's structure, shapes or dtypes")
  return bad


@functools.lru_cache(maxsize=8)
def _sampler(game: DeviceGame):
  """A jitted ``keys [B] -> records`` of one random trajectory per key (module docstring);
  kept for the last few games, so checking a game again does not compile again."""
  n = game.num_distinct
  private = game.num_private is not None
  every_step = private and _every_step(game)
  grid = (np.arange(SAMPLER_GRID, dtype=np.float32) + 0.5) / SAMPLER_GRID
  sampler = has_chance_sampler(game) and game.num_outcomes > 0

  def read(s):
    p = game.current_player(s)
    probs = game.chance_probs(s)
    rec = dict(player=p, legal=game.legal_mask(s), probs=probs, returns=game.returns(s),
               key0=game.info_key(s, 0), key1=game.info_key(s, 1), public=game.public_key(s))
    if sampler:  # outcomes drawn over the grid of u: their counts [C], and any out of range
      drawn = jax.vmap(lambda u: game.sample_chance(s, u))(jnp.asarray(grid))
      inside = (drawn >= 0) & (drawn < game.num_outcomes)
      rec["sampled"] = jnp.zeros(game.num_outcomes, jnp.int32).at[
          jnp.where(inside, drawn, 0)].add(inside.astype(jnp.int32))
      rec["sampled_outside"] = ~jnp.all(inside)
    if private:
      rec["private"] = jnp.stack([game.private_index(s, 0), game.private_index(s, 1)])
    if every_step:
      rec.update(_private_chance(game, s, rec["private"]))
    elif private:
      rec["state"] = s  # private_chance is read later, on a sample (_sample_private)
    return rec

  def pick(s, rec, key):
    chance = rec["player"] == CHANCE
    probs = jnp.zeros(n).at[:game.num_outcomes].set(rec["probs"]) if game.num_outcomes \
        else jnp.zeros(n)
    legal = jnp.zeros(n, bool).at[:game.num_actions].set(rec["legal"])
    weights = jnp.where(chance, probs, legal.astype(probs.dtype))
    logits = jnp.where(weights > 0, jnp.log(jnp.where(weights > 0, weights, 1.0)), -jnp.inf)
    a = jax.random.categorical(key, logits)
    return jnp.where(rec["player"] == TERMINAL, -1, a).astype(jnp.int32)

  def one(key):
    def body(s, k):
      rec = read(s)
      a = pick(s, rec, k)
      nxt = game.step(s, jnp.maximum(a, 0))
      s = jax.tree_util.tree_map(lambda x, y: jnp.where(a >= 0, y, x), s, nxt)
      return s, (rec, a)
    last, (recs, acts) = jax.lax.scan(body, game.init(), jax.random.split(key, game.max_length))
    final = read(last)
    recs = jax.tree_util.tree_map(lambda xs, x: jnp.concatenate([xs, x[None]]), recs, final)
    again = game.step(last, jnp.int32(0))
    unchanged = jnp.all(jnp.stack([jnp.all(x == y) for x, y in zip(
        jax.tree_util.tree_leaves(again), jax.tree_util.tree_leaves(last))]))
    return recs, acts, unchanged

  return jax.jit(jax.vmap(one))


def _every_step(game: DeviceGame) -> bool:
  k0, k1 = game.num_private
  return k0 * k1 <= _PRIVATE_CELLS


def _private_chance(game: DeviceGame, s, idx) -> dict:
  """The sum, minimum and own-pair entry of ``private_chance(s)`` (``idx [2]`` the pair), and
  whether ``with_private`` swaps a dealt player's private state and nothing public or of
  the opponent's (``private_with``; true where the game has no ``with_private``)."""
  pc = game.private_chance(s)
  k0, k1 = game.num_private
  ok = jnp.bool_(True)
  if type(game).with_private is not DeviceGame.with_private:
    for p, K in ((0, k0), (1, k1)):
      o = 1 - p
      other = (jnp.maximum(idx[p], 0) + 1) % K
      s2 = game.with_private(s, p, other)
      same = (jnp.all(game.private_index(s2, p) == other)
              & jnp.all(game.private_index(s2, o) == idx[o])
              & jnp.all(game.public_key(s2) == game.public_key(s))
              & jnp.all(game.info_key(s2, o) == game.info_key(s, o)))
      ok = ok & ((idx[p] < 0) | same)
  return dict(private_sum=jnp.sum(pc), private_min=jnp.min(pc),
              private_own=pc[jnp.clip(idx[0], 0, k0 - 1), jnp.clip(idx[1], 0, k1 - 1)],
              private_with=ok)


@functools.lru_cache(maxsize=8)
def _private_reader(game: DeviceGame):
  return jax.jit(jax.vmap(lambda s, idx: _private_chance(game, s, idx)))


def _sample_private(game: DeviceGame, rec: dict, seed: int) -> None:
  """Fills ``rec``'s ``private_sum/min/own [N, L + 1]`` from a uniform sample of the visited
  non-terminal states (:data:`_PRIVATE_BUDGET` cells of ``private_chance`` in all; the others
  read as passing), and drops the recorded states."""
  states = rec.pop("state")
  shape = rec["player"].shape
  rec.update(private_sum=np.ones(shape), private_min=np.zeros(shape), private_own=np.ones(shape),
             private_with=np.ones(shape, bool))
  where = np.flatnonzero((rec["player"] != TERMINAL).reshape(-1))
  k0, k1 = game.num_private
  rng = np.random.default_rng(seed)
  take = np.sort(rng.choice(where, size=min(len(where), max(1, _PRIVATE_BUDGET // (k0 * k1))),
                            replace=False))
  chunk = max(1, (1 << 24) // (k0 * k1))
  reader = _private_reader(game)
  for lo in range(0, len(take), chunk):
    part = take[lo:lo + chunk]
    idx = np.concatenate([part, np.full(chunk - len(part), part[0])])
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:])[idx], states)
    out = jax.device_get(reader(flat, rec["private"].reshape(-1, 2)[idx]))
    for name, v in out.items():
      rec[name].reshape(-1)[part] = np.asarray(v)[:len(part)]


def _sample(game: DeviceGame, trajectories: int, seed: int):
  """Host records ``[N, L + 1, ...]``, actions ``[N, L]`` and ``unchanged [N]``."""
  keys = jax.random.split(jax.random.PRNGKey(seed), trajectories)
  fn = _sampler(game)
  chunk = min(_CHUNK, trajectories)
  outs = []
  for lo in range(0, trajectories, chunk):
    idx = np.minimum(np.arange(lo, lo + chunk), trajectories - 1)
    m = min(trajectories, lo + chunk) - lo
    out = jax.device_get(fn(keys[idx]))
    outs.append(jax.tree_util.tree_map(lambda x, m=m: np.asarray(x)[:m], out))
  out = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *outs)
  if game.num_private is not None and not _every_step(game):
    _sample_private(game, out[0], seed)
  return out


def _rows(keys: np.ndarray) -> np.ndarray:
  """``[..., W]`` int keys as int64 ids, equal exactly for equal rows."""
  _, inv = np.unique(key_codes(keys.reshape(-1, keys.shape[-1])), return_inverse=True)
  return inv.reshape(keys.shape[:-1]).astype(np.int64)


def _own_sequences(player, key_ids, actions, p):
  """``[N, L + 1]`` ids of player ``p``'s own (information state, action) sequence before each
  step, equal exactly for equal sequences (a trie numbered on the host)."""
  n, steps = actions.shape
  seq = np.zeros((n, steps + 1), np.int64)
  trie: dict = {}
  for t in range(steps):
    own = player[:, t] == p
    seq[:, t + 1] = seq[:, t]
    if own.any():
      triples = np.stack([seq[own, t], key_ids[own, t], actions[own, t]], axis=1)
      uniq, inv = np.unique(triples, axis=0, return_inverse=True)
      ids = np.array([trie.setdefault(tuple(r), len(trie) + 1) for r in uniq.tolist()])
      seq[own, t + 1] = ids[inv.reshape(-1)]
  return seq


def _same_within(groups, values, where):
  """``(bad [N, L+1], first [N, L+1])``: where ``values`` differ from those of the first visited
  state of the same group (among ``where``), and that state's flat index."""
  flat_g, flat_w = groups.reshape(-1), where.reshape(-1)
  vals = values.reshape(flat_g.shape[0], -1)
  bad = np.zeros(flat_g.shape, bool)
  first = np.full(flat_g.shape, -1, np.int64)
  idx = np.flatnonzero(flat_w)
  if len(idx):
    _, first_pos, inv = np.unique(flat_g[idx], return_index=True, return_inverse=True)
    ref = idx[first_pos][inv.reshape(-1)]
    first[idx] = ref
    bad[idx] = np.any(vals[idx] != vals[ref], axis=1)
  return bad.reshape(groups.shape), first.reshape(groups.shape)


def check_rules(game: DeviceGame, *, trajectories: int = 1000, seed: int = 0) -> dict:
  """Checks ``game``'s rules on ``trajectories`` random trajectories (module docstring).

  Returns ``{"game", "trajectories", "checks": [names run: :func:`checks_of`], "failures":
  [{"check", "trajectory", "actions", "message"}, ...], "counts": {check: failing
  trajectories}}``; at most
  :data:`MAX_REPORTED` failures are listed per check, each at the first failing state of its
  trajectory (``actions``: the path from the root to that state). A shape failure stops
  before playing (``trajectory`` -1).
  """
  if not isinstance(game, DeviceGame):
    raise ValueError(f"check_rules takes a DeviceGame, got {type(game).__name__}")
  if isinstance(trajectories, bool) or not isinstance(trajectories, (int, np.integer)) \
     or trajectories < 1:
    raise ValueError(f"trajectories must be a positive integer, got {trajectories!r}")
  n = int(trajectories)
  checks = checks_of(game)
  report = {"game": game.game_string(), "trajectories": n, "checks": checks,
            "failures": [], "counts": {c: 0 for c in checks}}
  with jax.enable_x64(True):
    shape_bad = _shape_failures(game)
    if shape_bad:
      report["counts"]["shapes"] = len(shape_bad)
      report["failures"] = [{"check": "shapes", "trajectory": -1, "actions": [], "message": m}
                            for m in shape_bad[:MAX_REPORTED]]
      return report
    rec, actions, unchanged = _sample(game, n, seed)
  _host_checks(game, rec, actions, unchanged, report)
  return report


def _host_checks(game, rec, actions, unchanged, report):
  steps = actions.shape[1]
  player = rec["player"]
  # a state is visited when the step before it acted (the first terminal is, its copies not)
  visited = np.concatenate([np.ones((len(actions), 1), bool), actions >= 0], axis=1)
  terminal = visited & (player == TERMINAL)
  chance = visited & (player == CHANCE)
  decision = visited & ((player == 0) | (player == 1))
  found = {c: {} for c in CHECKS}  # check -> {trajectory: (step, message)}

  def flag(check, bad, message):
    first = bad.argmax(axis=1)
    for i in np.flatnonzero(bad.any(axis=1)).tolist():
      t = int(first[i])
      if i not in found[check] or t < found[check][i][0]:
        found[check][i] = (t, message(i, t))

  flag("players", visited & ~np.isin(player, (0, 1, CHANCE, TERMINAL)),
       lambda i, t: f"current_player is {player[i, t]}, not 0, 1, CHANCE or TERMINAL")
  probs = rec["probs"].astype(np.float64)
  total = probs.sum(-1)
  flag("chance_probabilities", chance & (np.any(probs < 0, -1) |
                                         (np.abs(total - 1.0) > PROB_ATOL)),
       lambda i, t: f"chance probabilities {probs[i, t].tolist()} are not a distribution "
                    f"(sum {total[i, t]!r})")
  flag("chance_probabilities", visited & ~chance & np.any(probs != 0, -1),
       lambda i, t: f"chance probabilities {probs[i, t].tolist()} are not zero where player "
                    f"{player[i, t]} is to act")
  if "sampled" in rec:
    share = rec["sampled"] / SAMPLER_GRID
    wrong = (np.abs(share - probs) > 2.0 / SAMPLER_GRID + PROB_ATOL) | (share > 0) & (probs <= 0)
    outside = rec["sampled_outside"]

    def sampler_message(i, t):
      bad = np.flatnonzero(wrong[i, t])
      return (f"sample_chance over a grid of u disagrees with chance_probs: outcomes "
              f"{bad.tolist()} drawn with shares {share[i, t, bad].tolist()} against "
              f"probabilities {probs[i, t, bad].tolist()}"
              f"{'; outcomes outside [0, C) drawn' if outside[i, t] else ''}")

    flag("chance_sampler", chance & (outside | np.any(wrong, -1)), sampler_message)
  legal = rec["legal"]
  flag("legal_actions", decision & ~legal.any(-1), lambda i, t: "empty legal mask at a decision")
  flag("legal_actions", (terminal | chance) & legal.any(-1),
       lambda i, t: f"legal mask {np.flatnonzero(legal[i, t]).tolist()} is not empty at a "
                    f"{'terminal' if player[i, t] == TERMINAL else 'chance node'}")
  ret = rec["returns"].astype(np.float64)
  finite = np.all(np.isfinite(ret), -1)
  flag("zero_sum", terminal & (~finite | (np.abs(ret.sum(-1)) > PROB_ATOL)),
       lambda i, t: f"returns {tuple(ret[i, t].tolist())} are not finite and zero-sum")
  flag("zero_sum", visited & ~terminal & np.any(ret != 0, -1),
       lambda i, t: f"returns {tuple(ret[i, t].tolist())} are not zero before the end")
  flag("max_length", (player[:, -1] != TERMINAL)[:, None] & (np.arange(steps + 1) == steps),
       lambda i, t: f"not over after max_length={game.max_length} steps")
  flag("terminal_step", (terminal[:, -1] & ~unchanged)[:, None] & (np.arange(steps + 1) == steps),
       lambda i, t: "step on a terminal changes the state")
  public = _rows(rec["public"])
  for p in (0, 1):
    keys = rec[f"key{p}"]
    # acting and waiting are told apart, as in the enumerated check (augmented information
    # states: Burch, Johanson, Bowling, "Solving Imperfect Information Games Using
    # Decomposition", 2014)
    key_ids = np.where(decision, 2 * _rows(keys) + (player == p), -1)
    seq = _own_sequences(player, key_ids, np.maximum(actions, 0), p)
    name = lambda i, t, keys=keys: keys[i, t].tolist()
    bad, first = _same_within(key_ids, seq, decision)
    flag("perfect_recall", bad, lambda i, t, p=p, first=first, name=name:
         f"information state {name(i, t)} of player {p} is also reached by a different own "
         f"sequence in trajectory {_where(first[i, t], steps, actions)}")
    acting = decision & (player == p)
    bad, first = _same_within(key_ids, legal, acting)
    flag("perfect_recall", bad, lambda i, t, p=p, first=first, name=name:
         f"information state {name(i, t)} of player {p} has legal actions "
         f"{np.flatnonzero(legal[i, t]).tolist()} here and others in trajectory "
         f"{_where(first[i, t], steps, actions)}")
    bad, first = _same_within(key_ids, public, decision)
    flag("public_states", bad, lambda i, t, p=p, first=first, name=name:
         f"information state {name(i, t)} of player {p} spans two public states (also in "
         f"trajectory {_where(first[i, t], steps, actions)})")
  if game.num_private is not None:
    idx = rec["private"]
    k = np.asarray(game.num_private)
    low = np.where(decision[..., None], 0, -1)
    flag("private_states", visited & np.any((idx < low) | (idx >= k), -1),
         lambda i, t: f"private indices {idx[i, t].tolist()} out of range for "
                      f"num_private={tuple(game.num_private)}")
    s, lo, own = (rec[f"private_{x}"].astype(np.float64) for x in ("sum", "min", "own"))
    flag("private_states", visited & ((np.abs(s - 1.0) > PROB_ATOL) | (lo < 0)),
         lambda i, t: f"private_chance sums to {s[i, t]!r} (minimum {lo[i, t]!r}), not a "
                      "distribution")
    dealt = visited & np.all(idx >= 0, -1)
    flag("private_states", dealt & (own <= 0),
         lambda i, t: f"private_chance is 0 on the trajectory's own private pair "
                      f"{idx[i, t].tolist()}")
    swapped = rec["private_with"].astype(bool)
    flag("private_states", visited & ~swapped,
         lambda i, t: "with_private changes more than the player's private state (its index, "
                      "the public key or the opponent's information state) at private pair "
                      f"{idx[i, t].tolist()}")
  for c in report["checks"]:
    if c == "shapes":
      continue
    report["counts"][c] = len(found[c])
    for i in sorted(found[c])[:MAX_REPORTED]:
      t, message = found[c][i]
      report["failures"].append({"check": c, "trajectory": i,
                                 "actions": actions[i, :t].tolist(), "message": message})


def _where(flat: int, steps: int, actions) -> str:
  i, t = divmod(int(flat), steps + 1)
  return f"{i} at actions {actions[i, :t].tolist()}"


def first_failure(report: dict) -> str | None:
  """The message ``jaxgt.games.check`` raises for a report's first failure (``None`` if none)."""
  if not report["failures"]:
    return None
  f = report["failures"][0]
  return (f"{report['game']}: check '{f['check']}' failed at trajectory {f['trajectory']} "
          f"after actions {f['actions']}: {f['message']}")

