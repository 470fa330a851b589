"""The shared argument checks and distributions of ``jaxgt.core`` (one implementation each)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgt.core import sequence_form
from jaxgt.core.checks import check_index, check_key, check_shape


def test_check_key_single_and_batched():
  for key in (jax.random.key(0), jax.random.PRNGKey(0)):
    check_key(key)
    batch = jax.random.split(key, 3)
    assert check_key(batch, (3,)).shape == batch.shape
    with pytest.raises(ValueError, match="a jax.random key"):
      check_key(batch)  # a batch where one key is expected
    with pytest.raises(ValueError, match=r"a batch \(4,\)"):
      check_key(batch, (4,))
  with pytest.raises(ValueError, match="jax.random key"):
    check_key(jnp.zeros(3, jnp.uint32))
  with pytest.raises(ValueError, match="jax.random key"):
    check_key(0)


def test_check_index():
  assert check_index("history", 3, 5) == 3
  assert check_index("history", np.int64(0), 5) == 0
  np.testing.assert_array_equal(check_index("ids", np.array([0, 4]), 5), [0, 4])
  with pytest.raises(ValueError, match=r"public state 7 out of range \[0, 5\) for kuhn"):
    check_index("public state", 7, 5, " for kuhn")
  with pytest.raises(ValueError, match=r"ids -1 out of range"):
    check_index("ids", np.array([0, -1, 9]), 5)
  for bad in (True, 1.0, "1"):
    with pytest.raises(ValueError, match="must be an integer"):
      check_index("x", bad, 5)


def test_check_shape():
  assert check_shape("w", np.zeros((2, 3, 4)), (..., None, 4)) == (2,)
  assert check_shape("w", np.zeros(4), (..., 4)) == ()
  assert check_shape("w", np.zeros((2, 4)), (2, 4)) == ()
  with pytest.raises(ValueError, match=r"w must have shape \(\.\.\., 4\), got \(2, 3\)"):
    check_shape("w", np.zeros((2, 3)), (..., 4))
  with pytest.raises(ValueError, match=r"must have shape \(3,\)"):
    check_shape("w", np.zeros((1, 3)), (3,))
  with pytest.raises(ValueError, match=r"must have shape \(\.\.\., 2, 3\)"):
    check_shape("w", np.zeros(3), (..., 2, 3))


def test_uniform_and_safe_div_keep_numpy_and_jax():
  legal = np.array([[True, False, True], [False, False, False]])
  u = sequence_form.uniform(legal)
  assert isinstance(u, np.ndarray)
  np.testing.assert_array_equal(u, [[0.5, 0.0, 0.5], [0.0, 0.0, 0.0]])
  assert isinstance(sequence_form.uniform(jnp.asarray(legal)), jax.Array)
  d = sequence_form.safe_div(np.array([1.0, 2.0]), np.array([2.0, 0.0]), 7.0)
  assert isinstance(d, np.ndarray)
  np.testing.assert_array_equal(d, [0.5, 7.0])
  np.testing.assert_array_equal(
      sequence_form.normalize(jnp.array([[0.0, 0.0, 0.0], [1.0, 3.0, 5.0]]),
                              jnp.asarray([[True, True, False], [True, True, False]])),
      [[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]])
