"""Orbax checkpoints: exact round trip (network, optimiser, buffers, counters, keys),
refusal of another game or architecture, and clear errors for missing or corrupt ones."""

import functools
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.nets import cvpn
from jaxgt.nets.encoding import build_encoding
from jaxgt.training import buffers
from jaxgt.training import checkpoint as ck
from jaxgt.training import learner as lr


@functools.lru_cache(maxsize=None)
def _model(name="kuhn_poker", hidden=(16,)):
  return cvpn.CVPN(build_encoding(jaxgt.load(name)), hidden=hidden)


def _state(seed):
  model = _model()
  cfg = lr.LearnerConfig(batch_size=4)
  ls = lr.init_learner(model, jax.random.PRNGKey(seed), cfg)
  ls = ls.replace(step=jnp.asarray(17 + seed, jnp.int32))
  rb = buffers.replay_buffer(model.encoding, 8)
  rb = rb.replace(uses=rb.uses.at[3].set(2), next=jnp.asarray(5, jnp.int32),
                  data=rb.data.replace(values=jax.random.normal(jax.random.PRNGKey(seed),
                                                                rb.data.values.shape)))
  return {"learner": ls, "replay": rb, "typed_key": jax.random.key(100 + seed),
          "raw_key": jax.random.PRNGKey(200 + seed),
          "counters": {"searches": jnp.asarray(12345, jnp.int64), "steps": jnp.asarray(9)}}


def _assert_same(a, b):
  la, ta = jax.tree_util.tree_flatten(a)
  lb, tb = jax.tree_util.tree_flatten(b)
  assert ta == tb
  for x, y in zip(la, lb):
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
      assert jnp.issubdtype(y.dtype, jax.dtypes.prng_key)
      np.testing.assert_array_equal(jax.random.key_data(x), jax.random.key_data(y))
    else:
      assert x.dtype == y.dtype
      np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_round_trip_is_exact_and_latest_step(tmp_path):
  d = tmp_path / "run"
  meta = ck.network_metadata(_model()) | {"config": {"batch_size": 4}}
  assert ck.latest_step(d) is None
  s3, s5 = _state(0), _state(1)
  ck.save(d, 3, s3, meta)
  ck.save(d, 5, s5, meta)
  assert ck.latest_step(d) == 5
  template = _state(7)
  got = ck.restore(d, template, meta)
  _assert_same(got, s5)
  _assert_same(ck.restore(d, template, meta, step=3), s3)
  # Keys continue the same stream after a restore.
  np.testing.assert_array_equal(jax.random.uniform(jax.random.fold_in(got["typed_key"], 1), 3),
                                jax.random.uniform(jax.random.fold_in(s5["typed_key"], 1), 3))
  assert ck.read_metadata(d)["hidden"] == [16]
  with pytest.raises(ck.CheckpointError, match="already exists"):
    ck.save(d, 5, s5, meta)


def test_other_game_or_architecture_is_refused(tmp_path):
  d = tmp_path / "run"
  ck.save(d, 1, _state(0), ck.network_metadata(_model()))
  with pytest.raises(ck.CheckpointError, match="another game: game = 'kuhn_poker'"):
    ck.restore(d, _state(0), ck.network_metadata(_model("leduc_poker")))
  with pytest.raises(ck.CheckpointError, match="hidden = \\[16\\] in the checkpoint, \\[32\\]"):
    ck.restore(d, _state(0), ck.network_metadata(_model(hidden=(32,))))
  with pytest.raises(ValueError, match="JSON"):
    ck.save(d, 2, _state(0), {"x": object()})


def test_normalised_entry_accepts_an_older_form_and_still_refuses_another(tmp_path):
  """A stored config written before a field existed is compared after ``normalise`` (the
  training loop reads it as a TrainConfig, the missing field at its default)."""
  from jaxgt.training import config as config_lib
  d = tmp_path / "run"
  current = config_lib.TrainConfig(hidden=(16,)).to_json()
  older = {k: v for k, v in current.items() if k != "value_average"}
  ck.save(d, 1, _state(0), ck.network_metadata(_model()) | {"config": older})
  meta = ck.network_metadata(_model()) | {"config": current}
  norm = {"config": lambda c: config_lib.from_dict(c).to_json()}
  with pytest.raises(ck.CheckpointError, match="another architecture/configuration: config"):
    ck.restore(d, _state(0), meta)  # compared raw
  _assert_same(ck.restore(d, _state(0), meta, normalise=norm), _state(0))
  other = dict(current, value_average="search")
  with pytest.raises(ck.CheckpointError, match="another architecture/configuration: config"):
    ck.restore(d, _state(0), ck.network_metadata(_model()) | {"config": other}, normalise=norm)


def test_missing_corrupt_or_other_structure_gives_clear_errors(tmp_path):
  meta = ck.network_metadata(_model())
  with pytest.raises(ck.CheckpointError, match="no checkpoint directory"):
    ck.restore(tmp_path / "nothing", _state(0), meta)
  (tmp_path / "empty").mkdir()
  with pytest.raises(ck.CheckpointError, match="no checkpoint in"):
    ck.restore(tmp_path / "empty", _state(0), meta)
  d = tmp_path / "run"
  ck.save(d, 1, _state(0), meta)
  with pytest.raises(ck.CheckpointError, match="no checkpoint step 4"):
    ck.restore(d, _state(0), meta, step=4)
  with pytest.raises(ck.CheckpointError, match="another structure|arrays"):
    ck.restore(d, {"only": jnp.zeros(3)}, meta)
  # a state with one more field (a run of an earlier jaxgt): named, without array dumps
  grown = dict(_state(0), extra=jnp.zeros((64, 64)))
  with pytest.raises(ck.CheckpointError, match="another structure") as info:
    ck.restore(d, grown, meta)
  assert len(str(info.value)) < 600 and "partial_restore" not in str(info.value)
  # Corrupt: the stored arrays are damaged.
  for f in pathlib.Path(d, "1", "state").rglob("*"):
    if f.is_file() and f.stat().st_size > 0:
      f.write_bytes(b"garbage")
  with pytest.raises(ck.CheckpointError, match="corrupt"):
    ck.restore(d, _state(0), meta)


def test_prune_keeps_the_newest_and_the_oldest_of_each_window(tmp_path):
  d = tmp_path / "run"
  meta = {"config": {}}
  for step in range(0, 21, 2):
    ck.save(d, step, {"x": jnp.full(3, step)}, meta)
  assert ck.prune(d, 0) == [] and ck.latest_step(d) == 20  # 0: every checkpoint kept
  # the two newest (18, 20) and the oldest of each window of 8 steps (0, 8, 16)
  assert ck.prune(d, 2, keep_every=8) == [2, 4, 6, 10, 12, 14]
  assert sorted(int(p.name) for p in d.iterdir() if p.name.isdigit()) == [0, 8, 16, 18, 20]
  assert int(ck.restore(d, {"x": jnp.zeros(3, jnp.int32)}, meta, step=8)["x"][0]) == 8
  with pytest.raises(ck.CheckpointError, match="no checkpoint step 6"):
    ck.restore(d, {"x": jnp.zeros(3, jnp.int32)}, meta, step=6)
  # a window's oldest checkpoint stays; a newer one in it goes once two newer ones exist
  ck.save(d, 22, {"x": jnp.full(3, 22)}, meta)
  assert ck.prune(d, 2, keep_every=8) == [18]
  assert ck.prune(d, 1) == [0, 8, 16, 20]  # without windows, only the newest
  assert ck.latest_step(d) == 22
  for bad in ({"keep_latest": -1}, {"keep_latest": 1, "keep_every": 1.5}):
    with pytest.raises(ValueError):
      ck.prune(d, **bad)


def test_a_checkpoint_saved_on_another_device_restores_on_this_one(tmp_path):
  """Arrays saved from a device this process does not have (a run trained on one machine,
  played on another) restore as host arrays with their values."""
  import json
  import os
  import subprocess
  import sys
  save = ("import os, sys\n"
          "os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=2'\n"
          "import jax, jax.numpy as jnp\n"
          "from jaxgt.training import checkpoint\n"
          "x = jax.device_put(jnp.arange(6.0).reshape(2, 3), jax.devices()[1])\n"
          "checkpoint.save(sys.argv[1], 3, {'learner': {'params': {'w': x}}}, {'game': 'kuhn'})\n")
  env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # restore: one device
  subprocess.run([sys.executable, "-c", save, str(tmp_path)], check=True, env=env,
                 capture_output=True)
  load = ("import sys\n"
          "from jaxgt.training import checkpoint\n"
          "state, where = checkpoint.restore_stored(sys.argv[1])\n"
          "import json\n"
          "w = state['learner']['params']['w']\n"
          "print(where.split()[-1], json.dumps(w.ravel().tolist()))\n")
  got = subprocess.run([sys.executable, "-c", load, str(tmp_path)], check=True, env=env,
                       capture_output=True, text=True).stdout.split(None, 1)
  assert got[0] == "3"
  assert json.loads(got[1]) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
