import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402

# Tests compare against OpenSpiel to 1e-6 relative: run in 64-bit.
jax.config.update("jax_enable_x64", True)
