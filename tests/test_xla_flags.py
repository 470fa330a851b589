"""The XLA CPU settings ``import jaxgt`` applies (jaxgt/core/xla_flags.py)."""

import os

from jaxgt.core import xla_flags


def test_tune_cpu_appends_the_small_loop_threshold_and_the_ynn_setting_once():
  env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
  assert xla_flags.tune_cpu(env, has_ynn_flag=True)
  assert env["XLA_FLAGS"] == ("--xla_force_host_platform_device_count=8 " + xla_flags.FLAG
                              + " " + xla_flags.YNN_FLAG)
  assert not xla_flags.tune_cpu(env, has_ynn_flag=True)  # already there: unchanged
  assert env["XLA_FLAGS"].count("xla_backend_extra_options") == 1
  assert env["XLA_FLAGS"].count(xla_flags.YNN_NAME) == 1
  fresh = {}
  assert xla_flags.tune_cpu(fresh, has_ynn_flag=True)
  assert fresh["XLA_FLAGS"] == xla_flags.FLAG + " " + xla_flags.YNN_FLAG


def test_the_ynn_setting_needs_a_jaxlib_that_knows_it():
  """XLA aborts the process on a flag it does not know, so the flag goes in only where the
  installed jaxlib has it."""
  env = {}
  assert xla_flags.tune_cpu(env, has_ynn_flag=False)
  assert env["XLA_FLAGS"] == xla_flags.FLAG
  assert not xla_flags.jaxlib_has_flag("xla_cpu_no_such_flag_anywhere_0123")
  assert not xla_flags.jaxlib_has_flag(xla_flags.YNN_NAME, minimum=(999, 0))


def test_tune_cpu_keeps_the_users_settings_and_honours_the_opt_out():
  own = {"XLA_FLAGS": "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=0"}
  assert xla_flags.tune_cpu(own, has_ynn_flag=True)  # only the YNN setting added
  assert own["XLA_FLAGS"] == ("--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=0 "
                              + xla_flags.YNN_FLAG)
  ynn = {"XLA_FLAGS": f"--{xla_flags.YNN_NAME}="}
  assert xla_flags.tune_cpu(ynn, has_ynn_flag=True)
  assert ynn["XLA_FLAGS"] == f"--{xla_flags.YNN_NAME}= " + xla_flags.FLAG
  both = {"XLA_FLAGS": own["XLA_FLAGS"]}
  assert not xla_flags.tune_cpu(both, has_ynn_flag=True)
  off = {xla_flags.OPT_OUT: "0", "XLA_FLAGS": "--xla_cpu_enable_fast_math=false"}
  assert not xla_flags.tune_cpu(off, has_ynn_flag=True)
  assert off["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false"


def test_importing_jaxgt_set_the_flags_in_this_process():
  """The tests import jaxgt before any computation, so the flags are in effect here (unless the
  environment opted out or set its own)."""
  flags = os.environ.get("XLA_FLAGS", "")
  opted_out = os.environ.get(xla_flags.OPT_OUT, "1").strip() == "0"
  assert xla_flags.FLAG in flags or opted_out or "xla_backend_extra_options" in flags
  if xla_flags.jaxlib_has_flag() and not opted_out:
    assert xla_flags.YNN_NAME in flags
