"""The XLA CPU setting ``import jaxgt`` applies (jaxgt/core/xla_flags.py)."""

import os

from jaxgt.core import xla_flags


def test_tune_cpu_appends_the_small_loop_threshold_once():
  env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
  assert xla_flags.tune_cpu(env)
  assert env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=8 " + xla_flags.FLAG
  assert not xla_flags.tune_cpu(env)  # already there: unchanged
  assert env["XLA_FLAGS"].count("xla_backend_extra_options") == 1
  fresh = {}
  assert xla_flags.tune_cpu(fresh) and fresh["XLA_FLAGS"] == xla_flags.FLAG


def test_tune_cpu_keeps_the_users_backend_options_and_honours_the_opt_out():
  own = {"XLA_FLAGS": "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=0"}
  assert not xla_flags.tune_cpu(own)
  assert own["XLA_FLAGS"] == "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=0"
  off = {xla_flags.OPT_OUT: "0", "XLA_FLAGS": "--xla_cpu_enable_fast_math=false"}
  assert not xla_flags.tune_cpu(off)
  assert off["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false"


def test_importing_jaxgt_set_the_flag_in_this_process():
  """The tests import jaxgt before any computation, so the flag is in effect here (unless the
  environment opted out or set its own backend options)."""
  flags = os.environ.get("XLA_FLAGS", "")
  opted_out = os.environ.get(xla_flags.OPT_OUT, "1").strip() == "0"
  assert xla_flags.FLAG in flags or opted_out or "xla_backend_extra_options" in flags
