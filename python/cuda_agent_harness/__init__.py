"""The cuda-agent harness: the Python side of the kernel judge.

The C++ judge starts one process per job (`python3 -m cuda_agent_harness JOB --spec SPEC.json`); the job
reads its spec, does its work and writes one JSON result to the spec's `result_path`. The contract is
docs/harness-protocol.md. Importing this package does not import torch (the `static` job must stay fast).
"""
