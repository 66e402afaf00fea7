// python_step.h — runs a module of the project's Python packages (python/) as a separate process,
// for the steps the C++ side leaves to Python libraries (parquet through pyarrow).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace cuda_agent {

// RunPythonStep runs `python -m MODULE ARGS...` with python/ on PYTHONPATH (the harness's
// interpreter and home: $CUDA_AGENT_PYTHON, $CUDA_AGENT_HOME); a failure carries its stderr.
Status RunPythonStep(const std::vector<std::string>& module_and_args);

}  // namespace cuda_agent
