"""Data synthesis for `cuda-agent synth` (docs/synth.md): the op catalog, the random composer, the filters
and the `synth` job that turns them into a dataset.

A package of its own, outside the trusted judging harness (cuda_agent_harness): it uses the harness's
comparison, task loading and job protocol, and the harness never imports it.
"""
