"""The OpenEnv server side: ``environment.CudaAgentEnvironment`` and ``app`` (``python -m
cuda_agent_openenv.server --serve-url URL``)."""
