// binding.cpp — fixed workspace infrastructure. Do not modify.
//
// Defines the Python extension module `cuda_extension`. It holds no bindings
// of its own: every kernels/<name>_binding.cpp registers its functions with
// REGISTER_BINDING (see binding_registry.h), and they are added here when
// Python imports the module.
#include <pybind11/pybind11.h>

#include "binding_registry.h"

PYBIND11_MODULE(cuda_extension, m) {
  m.doc() = "Custom kernels of this workspace, registered by kernels/*_binding.cpp";
  cuda_agent::BindingRegistry::Instance().ApplyAll(m);
}
