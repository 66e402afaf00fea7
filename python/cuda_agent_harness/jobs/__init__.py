"""One module per harness job; each exposes `run(spec, result)` (see cuda_agent_harness.runner)."""
