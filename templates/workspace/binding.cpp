// binding.cpp — fixed workspace infrastructure. Do not modify.
//
// Defines the Python extension module `cuda_extension`. It holds no kernels of its own: every
// kernels/<name>_binding.cpp registers its functions, either with REGISTER_BINDING (pybind11 and
// torch's types, binding_registry.h) or with PLAIN_EXPORT (no torch headers, plain_binding.h), and
// they are added here when Python imports the module. For the plain bindings this file is the
// adapter: Python arguments to plain::Tensor views, tensors made through torch's allocator, results
// back to torch tensors.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <pybind11/pybind11.h>
#if defined(CUDA_AGENT_DEVICE_CUDA)
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "binding_registry.h"
#include "plain_binding.h"

namespace PLAIN_BINDING_HIDDEN plain {
namespace detail {
namespace {

std::vector<Export>& Exports() {
  static std::vector<Export> exports;
  return exports;
}

// The tensors of the call in progress, received and made; plain::Tensor::handle indexes them.
struct CallTensors {
  std::vector<at::Tensor> tensors;
};
thread_local CallTensors* current_call = nullptr;

// CallScope makes `call` the current call until it ends (also by an exception).
class CallScope {
 public:
  explicit CallScope(CallTensors* call) : previous_(current_call) { current_call = call; }
  ~CallScope() { current_call = previous_; }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  CallTensors* previous_;
};

const std::pair<at::ScalarType, ScalarType> kDtypes[] = {
    {at::kFloat, kFloat32}, {at::kDouble, kFloat64}, {at::kHalf, kFloat16},
    {at::kBFloat16, kBFloat16}, {at::kChar, kInt8}, {at::kByte, kUInt8},
    {at::kShort, kInt16}, {at::kInt, kInt32}, {at::kLong, kInt64}, {at::kBool, kBool},
};

at::ScalarType ToTorch(ScalarType type) {
  for (const auto& [torch_type, plain_type] : kDtypes) {
    if (plain_type == type) return torch_type;
  }
  throw Error("unknown plain::ScalarType " + std::to_string(static_cast<int>(type)));
}

CallTensors& Current(const char* what) {
  if (current_call == nullptr) {
    throw Error(std::string(what) + " called outside a call from Python (at load time?)");
  }
  return *current_call;
}

// Track adds `t` to the call and returns its view.
Tensor Track(const at::Tensor& t, CallTensors& call) {
  Tensor view;
  const auto* dtype = std::find_if(std::begin(kDtypes), std::end(kDtypes),
                                   [&](const auto& pair) { return pair.first == t.scalar_type(); });
  if (dtype == std::end(kDtypes)) throw pybind11::type_error(std::string("plain bindings take no ") +
                                         c10::toString(t.scalar_type()) + " tensors");
  view.dtype = dtype->second;
  if (t.dim() > kMaxDims) {
    throw pybind11::type_error("plain bindings take tensors of at most " + std::to_string(kMaxDims) +
                               " dimensions, got " + std::to_string(t.dim()));
  }
  if (t.is_cuda()) {
    view.device = t.get_device();
  } else if (!t.is_cpu()) {
    throw pybind11::type_error("plain bindings take CPU and CUDA tensors, got one on " +
                               t.device().str());
  }
  view.data = t.data_ptr();
  view.dim = static_cast<int32_t>(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) {
    view.sizes[d] = t.size(d);
    view.strides[d] = t.stride(d);
  }
  view.handle = static_cast<int64_t>(call.tensors.size());
  call.tensors.push_back(t);
  return view;
}

// Owned is the torch tensor a returned view stands for: the call's tensor itself, or a view of its
// memory when the sizes, strides or start differ.
at::Tensor Owned(const Tensor& view, const CallTensors& call) {
  if (view.handle < 0 || view.handle >= static_cast<int64_t>(call.tensors.size())) {
    throw Error("a returned plain::Tensor is neither an argument of the call nor made by plain::empty");
  }
  const at::Tensor& owner = call.tensors[view.handle];
  if (ToTorch(view.dtype) != owner.scalar_type()) {
    throw Error("a returned plain::Tensor's dtype differs from the tensor it views");
  }
  if (view.dim < 0 || view.dim > kMaxDims) throw Error("a returned plain::Tensor has a bad dim");
  std::vector<int64_t> sizes(view.sizes, view.sizes + view.dim);
  std::vector<int64_t> strides(view.strides, view.strides + view.dim);
  if (view.data == owner.data_ptr() && owner.sizes() == at::IntArrayRef(sizes) &&
      owner.strides() == at::IntArrayRef(strides)) {
    return owner;
  }
  const char* base = static_cast<const char*>(owner.storage().data());
  std::ptrdiff_t bytes = static_cast<const char*>(view.data) - base;
  int64_t element = static_cast<int64_t>(owner.element_size());
  if (base == nullptr || bytes < 0 || bytes % element != 0) {
    throw Error("a returned plain::Tensor's data lies outside the memory of the tensor it views");
  }
  // as_strided checks that every element lies inside the storage.
  return owner.as_strided(sizes, strides, bytes / element);
}

std::string KindName(Kind kind) {
  switch (kind) {
    case Kind::kTensor: return "Tensor";
    case Kind::kFloat: return "float";
    case Kind::kInt: return "int";
    case Kind::kBool: return "bool";
    case Kind::kTensorList: return "list[Tensor]";
    case Kind::kVoid: return "None";
  }
  return "?";
}

std::string ArgName(const Export& e, size_t i) {
  return e.arg_names.empty() ? "argument " + std::to_string(i + 1) : "'" + e.arg_names[i] + "'";
}

std::string Signature(const Export& e) {
  std::string s = e.name + "(";
  for (size_t i = 0; i < e.params.size(); ++i) {
    if (i > 0) s += ", ";
    if (!e.arg_names.empty()) s += e.arg_names[i] + ": ";
    s += KindName(e.params[i]);
  }
  return s + ") -> " + KindName(e.result);
}

Value FromPython(const Export& e, size_t i, pybind11::handle obj, CallTensors& call) {
  Value v;
  v.kind = e.params[i];
  PyObject* o = obj.ptr();
  auto wrong = [&](const char* expected) {
    return pybind11::type_error(e.name + "(): " + ArgName(e, i) + " must be " + expected + ", not " +
                                std::string(Py_TYPE(o)->tp_name));
  };
  switch (v.kind) {
    case Kind::kTensor: {
      pybind11::detail::make_caster<at::Tensor> caster;
      if (!caster.load(obj, false)) throw wrong("a Tensor");
      at::Tensor t = pybind11::detail::cast_op<at::Tensor>(caster);
      if (!t.defined()) throw wrong("a defined Tensor");
      v.tensor = Track(t, call);
      break;
    }
    case Kind::kFloat:
      if (PyBool_Check(o) || !(PyFloat_Check(o) || PyLong_Check(o))) throw wrong("a float");
      v.f = PyFloat_AsDouble(o);
      break;
    case Kind::kInt: {
      if (PyBool_Check(o) || !PyLong_Check(o)) throw wrong("an int");
      int overflow = 0;
      v.i = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (overflow != 0) throw wrong("an int of 64 bits");
      break;
    }
    case Kind::kBool:
      if (!PyBool_Check(o)) throw wrong("a bool");
      v.b = o == Py_True;
      break;
    default:
      throw Error(e.name + ": unsupported parameter kind");
  }
  return v;
}

pybind11::object ToPython(const Export& e, const Value& result, const CallTensors& call) {
  switch (result.kind) {
    case Kind::kVoid: return pybind11::none();
    case Kind::kTensor: return pybind11::cast(Owned(result.tensor, call));
    case Kind::kTensorList: {
      pybind11::list list;
      for (const Tensor& t : result.list) list.append(pybind11::cast(Owned(t, call)));
      return std::move(list);
    }
    case Kind::kFloat: return pybind11::float_(result.f);
    case Kind::kInt: return pybind11::int_(result.i);
    case Kind::kBool: return pybind11::bool_(result.b);
  }
  throw Error(e.name + ": unsupported result kind");
}

pybind11::object CallExport(const Export& e, const pybind11::args& args, const pybind11::kwargs& kwargs) {
  const size_t n = e.params.size();
  if (args.size() > n) {
    throw pybind11::type_error(Signature(e) + " takes " + std::to_string(n) + " arguments, got " +
                               std::to_string(args.size()));
  }
  std::vector<pybind11::handle> given(n);
  for (size_t i = 0; i < args.size(); ++i) given[i] = args[i];
  for (const auto& [key, value] : kwargs) {
    std::string name = pybind11::str(key);
    size_t index = n;
    for (size_t i = 0; i < e.arg_names.size(); ++i) {
      if (e.arg_names[i] == name) index = i;
    }
    if (index == n) throw pybind11::type_error(Signature(e) + ": no argument named '" + name + "'");
    if (given[index]) throw pybind11::type_error(Signature(e) + ": '" + name + "' given twice");
    given[index] = value;
  }
  CallTensors call;
  std::vector<Value> values;
  values.reserve(n);
  c10::OptionalDeviceGuard guard;
  for (size_t i = 0; i < n; ++i) {
    if (!given[i]) throw pybind11::type_error(Signature(e) + ": " + ArgName(e, i) + " is missing");
    values.push_back(FromPython(e, i, given[i], call));
    if (values.back().kind == Kind::kTensor && values.back().tensor.is_cuda() && !guard.original_device()) {
      guard.reset_device(call.tensors.back().device());
    }
  }
  Value result;
  {
    CallScope scope(&call);
    e.invoke(values.data(), &result);
  }
  if (result.kind != e.result) throw Error(e.name + ": the result does not have the declared type");
  return ToPython(e, result, call);
}

// Define adds every PLAIN_EXPORT to `m`, sorted by name; a name taken twice throws.
void Define(pybind11::module& m) {
  std::vector<const Export*> sorted;
  for (const Export& e : Exports()) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Export* a, const Export* b) { return a->name < b->name; });
  for (const Export* e : sorted) {
    std::string where = e->file;
    if (size_t k = where.rfind("kernels/"); k != std::string::npos) where = where.substr(k);
    if (!e->arg_names.empty() && e->arg_names.size() != e->params.size()) {
      throw std::runtime_error("PLAIN_EXPORT(" + e->name + ") in " + where + " names " +
                               std::to_string(e->arg_names.size()) + " arguments; the function takes " +
                               std::to_string(e->params.size()));
    }
    if (pybind11::hasattr(m, e->name.c_str())) {
      throw std::runtime_error("PLAIN_EXPORT(" + e->name + ") in " + where +
                               ": cuda_extension already has a function of that name");
    }
    m.def(
        e->name.c_str(),
        [e](const pybind11::args& args, const pybind11::kwargs& kwargs) {
          return CallExport(*e, args, kwargs);
        },
        (Signature(*e) + "\n\nFrom " + where + " (PLAIN_EXPORT).").c_str());
  }
}

}  // namespace

void Register(Export e) { Exports().push_back(std::move(e)); }

}  // namespace detail

Tensor empty(const std::vector<int64_t>& sizes, ScalarType dtype, int32_t device) {
  detail::CallTensors& call = detail::Current("plain::empty");
  if (sizes.size() > static_cast<size_t>(kMaxDims)) {
    throw Error("plain::empty: at most " + std::to_string(kMaxDims) + " dimensions");
  }
  at::TensorOptions options = at::TensorOptions().dtype(detail::ToTorch(dtype));
  options = device < 0 ? options.device(at::kCPU) : options.device(at::Device(at::kCUDA, device));
  return detail::Track(at::empty(sizes, options), call);
}

Tensor empty_like(const Tensor& like) {
  return empty(std::vector<int64_t>(like.sizes, like.sizes + like.dim), like.dtype, like.device);
}

void* current_stream(int32_t device) {
  if (device < 0) return nullptr;
#if defined(CUDA_AGENT_DEVICE_CUDA)
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
#else
  throw Error("plain::current_stream: this extension was built for the CPU");
#endif
}

}  // namespace plain

PYBIND11_MODULE(cuda_extension, m) {
  m.doc() = "Custom kernels of this workspace, registered by kernels/*_binding.cpp";
  cuda_agent::BindingRegistry::Instance().ApplyAll(m);
  plain::detail::Define(m);
}
