"""cuda_agent_rl: a minimal GRPO loop on transformers that trains a small policy end to end on the
real judge through ``cuda-agent serve`` (docs/toy_rl.md). It proves the environment's training
path on one GPU where verl, Ray and vLLM cannot run; it is not a way to teach a model CUDA.

- ``arms`` — the action space: a kernel template's arms per toy task, rendered as an answer;
- ``policy`` — a tiny randomly initialised GPT-2 that writes one token per arm slot;
- ``grpo`` — the loop (``python -m cuda_agent_rl --server URL --out DIR``);
- ``plot`` — the reward curve as a self-contained SVG.
"""
