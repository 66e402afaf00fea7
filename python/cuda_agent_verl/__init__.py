"""cuda_agent_verl: the verl plug-in of cuda-agent (docs/training.md).

- ``agent_loop.CudaAgentLoop`` — verl agent loop ``cuda_agent``: one environment-server session per
  sample, tool calls parsed from the model's tokens, the reward of the final workspace.
- ``reward.compute_score`` — single-turn reward function (``custom_reward_function``).
- ``server_client`` — the HTTP client of ``cuda-agent serve`` (docs/server.md).
- ``tool_parser`` / ``answer`` — what the model wrote: tool calls, solution files.
- ``parquet`` / ``sft_dataset`` — datasets for verl (RL prompts, SFT chat rows).

Importing this package imports nothing of verl; only ``agent_loop`` and ``sft_dataset`` need it.
"""
