"""Policy files: round trip, wrong game, corrupt files, invalid probabilities, OpenSpiel."""

import json

import numpy as np
import pytest

import jaxgt
from jaxgt import policy as pol_lib
from jaxgt.policy import Policy, PolicyError

pyspiel = pytest.importorskip("pyspiel")


@pytest.fixture(scope="module")
def kuhn_result():
  return jaxgt.solve("kuhn_poker", iterations=200, eval_every=0, dtype="float64")


def test_save_load_round_trip(tmp_path, kuhn_result):
  path = tmp_path / "kuhn.npz"
  kuhn_result.policy.save(path)
  pol, g = pol_lib.load_policy(path)
  assert g.fingerprint == kuhn_result.game.fingerprint
  for a, b in zip(pol.probs, kuhn_result.policy.probs):
    np.testing.assert_array_equal(a, b)


def test_loading_policy_for_another_game_fails(tmp_path, kuhn_result):
  path = tmp_path / "kuhn.npz"
  kuhn_result.policy.save(path)
  with pytest.raises(PolicyError, match="policy is for game kuhn_poker .* not for leduc_poker"):
    pol_lib.load_policy(path, jaxgt.load("leduc_poker"))


def test_truncated_and_corrupt_files_fail(tmp_path, kuhn_result):
  path = tmp_path / "kuhn.npz"
  kuhn_result.policy.save(path)
  data = path.read_bytes()
  (tmp_path / "trunc.npz").write_bytes(data[: len(data) // 2])
  with pytest.raises(PolicyError, match="truncated or corrupt"):
    pol_lib.load_policy(tmp_path / "trunc.npz")
  (tmp_path / "junk.npz").write_bytes(b"not a policy at all")
  with pytest.raises(PolicyError, match="truncated or corrupt"):
    pol_lib.load_policy(tmp_path / "junk.npz")
  np.savez(tmp_path / "other.npz", a=np.ones(3))
  with pytest.raises(PolicyError, match="not a jaxgt policy"):
    pol_lib.load_policy(tmp_path / "other.npz")
  with pytest.raises(PolicyError, match="cannot read"):
    pol_lib.load_policy(tmp_path / "missing.npz")


def test_invalid_probabilities_fail(tmp_path):
  g = jaxgt.load("kuhn_poker")
  uniform = [np.full((6, 2), 0.5), np.full((6, 2), 0.5)]
  Policy.from_arrays(g, uniform)
  neg = [uniform[0].copy(), uniform[1]]
  neg[0][2] = [1.5, -0.5]
  with pytest.raises(PolicyError, match="negative probability at information state '2'"):
    Policy.from_arrays(g, neg)
  bad_sum = [uniform[0] * 0.9, uniform[1]]
  with pytest.raises(PolicyError, match="sum to 0.9"):
    Policy.from_arrays(g, bad_sum)
  with pytest.raises(PolicyError, match=r"shape \(5, 2\)"):
    Policy.from_arrays(g, [uniform[0][:5], uniform[1]])
  nan = [uniform[0].copy(), uniform[1]]
  nan[0][0, 0] = np.nan
  with pytest.raises(PolicyError, match="non-finite"):
    Policy.from_arrays(g, nan)
  leduc = jaxgt.load("leduc_poker")
  probs = [np.full((468, 3), 1 / 3), np.full((468, 3), 1 / 3)]
  with pytest.raises(PolicyError, match="illegal action"):
    Policy.from_arrays(leduc, probs)
  # a file whose probabilities were tampered with is rejected on load
  p = Policy(g.name, g.fingerprint, tuple(bad_sum))
  p.save(tmp_path / "bad.npz")
  with pytest.raises(PolicyError, match="sum to"):
    pol_lib.load_policy(tmp_path / "bad.npz")


def test_openspiel_round_trip_and_export(tmp_path, kuhn_result):
  g = kuhn_result.game
  tab = pol_lib.to_openspiel(kuhn_result.policy, g)
  back = pol_lib.from_openspiel(tab, g)
  for a, b in zip(back.probs, kuhn_result.policy.probs):
    np.testing.assert_allclose(a, b, atol=1e-12)
  out = tmp_path / "kuhn.json"
  pol_lib.export_openspiel(kuhn_result.policy, g, out)
  doc = json.loads(out.read_text())
  game = pyspiel.load_game(doc["game"])
  again = pol_lib.from_openspiel(doc["policy"], g)
  from open_spiel.python.algorithms import exploitability
  assert exploitability.exploitability(game, pol_lib.to_openspiel(again, g)) == pytest.approx(
      kuhn_result.exploitability, rel=1e-6)


def test_export_of_game_without_openspiel_equivalent_fails():
  res = jaxgt.solve("rps_plus", iterations=10, eval_every=0)
  with pytest.raises(PolicyError, match="no OpenSpiel equivalent"):
    pol_lib.export_openspiel(res.policy, res.game, "/dev/null")
