"""cuda_agent_openenv: cuda-agent as an OpenEnv environment (docs/training.md, docs/decisions/openenv.md).

A thin adapter: an OpenEnv server (``server.app``, OpenEnv's FastAPI app with its ``/ws`` session
protocol) whose environment instances each drive one session of a running ``cuda-agent serve``
over its ``/v1`` HTTP API. The judging stays in ``serve``; nothing here judges.

- ``models`` — ``CudaAgentAction`` (a tool call or ``grade``), ``CudaAgentObservation``,
  ``CudaAgentState``.
- ``client.CudaAgentEnv`` — OpenEnv's ``EnvClient`` for it (``reset()``, ``step()``, ``state()``).
- ``server.environment.CudaAgentEnvironment`` / ``server.app`` — the environment and its server.
"""

from cuda_agent_openenv.models import GRADE, RETRYABLE, CudaAgentAction, CudaAgentObservation, CudaAgentState

__all__ = ["GRADE", "RETRYABLE", "CudaAgentAction", "CudaAgentObservation", "CudaAgentState", "CudaAgentEnv"]


def __getattr__(name):
    if name == "CudaAgentEnv":
        from cuda_agent_openenv.client import CudaAgentEnv

        return CudaAgentEnv
    raise AttributeError(name)
