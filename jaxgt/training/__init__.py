"""Student of Games' training process (``003``, "Training Process", Algorithm 2): device
buffers (:mod:`jaxgt.training.buffers`), the learner (:mod:`jaxgt.training.learner`) and
orbax checkpoints (:mod:`jaxgt.training.checkpoint`).

Layering: ``training`` may import ``core``, ``games``, ``solvers``, ``search``, ``nets``,
``agents``, ``evaluation`` and ``jaxgt.policy``; only ``jaxgt.cli`` imports ``training``
(``tests/test_architecture.py``). An agent that loads a checkpoint (the ``sog(...)``
agent) therefore lives here, in ``jaxgt/training/``, and is registered lazily by name
(the agent registry imports it only when the spec is used), so ``agents`` never imports
``training``.

Submodules are imported explicitly (``from jaxgt.training import learner``); this package
imports none of them, so importing it stays cheap.
"""
