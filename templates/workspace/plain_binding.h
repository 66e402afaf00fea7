// plain_binding.h — fixed workspace infrastructure. Do not modify.
//
// Bindings without torch's headers. A binding file that includes <torch/types.h> and pybind11 takes
// 5-10 s to compile, whatever it holds: g++ instantiates and compiles, in every such file, the
// templates and functions those headers use. A binding file that includes only this header (with the
// C++ standard library and the CUDA runtime) compiles in a fraction of a second; binding.cpp, built
// once, turns Python's arguments into plain::Tensor views and the results back into torch tensors.
//
// Usage, a complete kernels/relu_scale_binding.cpp:
//
//   #include <cuda_runtime.h>
//   #include "../plain_binding.h"
//
//   void relu_scale_launch(const float* x, float* y, int64_t n, float scale, cudaStream_t stream);
//
//   static plain::Tensor relu_scale_forward(const plain::Tensor& x, double scale) {
//     PLAIN_CHECK(x.is_cuda() && x.dtype == plain::kFloat32 && x.is_contiguous(),
//                 "relu_scale: x must be a contiguous float32 CUDA tensor");
//     plain::Tensor y = plain::empty_like(x);
//     relu_scale_launch(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(),
//                       static_cast<float>(scale),
//                       static_cast<cudaStream_t>(plain::current_stream(x.device)));
//     return y;
//   }
//   PLAIN_EXPORT(relu_scale_forward, "x", "scale");
//
// Python calls it as cuda_extension.relu_scale_forward(x, scale) or (x=..., scale=...).
// Parameters may be plain::Tensor (by value or const&), double, float, int64_t, int and bool; the
// result plain::Tensor, std::vector<plain::Tensor> (a Python list), double, int64_t, bool or void.
// Tensors a call receives or makes (plain::empty) live until the call returns; a returned tensor must
// be one of them, or a view of one (other sizes or strides over its memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// Hidden: the exports are private to the extension module.
#if defined(__GNUC__)
#define PLAIN_BINDING_HIDDEN __attribute__((visibility("hidden")))
#else
#define PLAIN_BINDING_HIDDEN
#endif

namespace PLAIN_BINDING_HIDDEN plain {

enum class ScalarType : int32_t {
  kFloat32, kFloat64, kFloat16, kBFloat16, kInt8, kUInt8, kInt16, kInt32, kInt64, kBool,
};
inline constexpr ScalarType kFloat32 = ScalarType::kFloat32;
inline constexpr ScalarType kFloat64 = ScalarType::kFloat64;
inline constexpr ScalarType kFloat16 = ScalarType::kFloat16;
inline constexpr ScalarType kBFloat16 = ScalarType::kBFloat16;
inline constexpr ScalarType kInt8 = ScalarType::kInt8;
inline constexpr ScalarType kUInt8 = ScalarType::kUInt8;
inline constexpr ScalarType kInt16 = ScalarType::kInt16;
inline constexpr ScalarType kInt32 = ScalarType::kInt32;
inline constexpr ScalarType kInt64 = ScalarType::kInt64;
inline constexpr ScalarType kBool = ScalarType::kBool;

inline constexpr int kMaxDims = 8;

// ElementSize is the bytes of one element of `type`.
inline constexpr std::size_t ElementSize(ScalarType type) {
  switch (type) {
    case kFloat64: case kInt64: return 8;
    case kFloat32: case kInt32: return 4;
    case kFloat16: case kBFloat16: case kInt16: return 2;
    default: return 1;
  }
}

// Error is what PLAIN_CHECK throws; Python sees a RuntimeError with the message.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

[[noreturn]] inline void Fail(const char* file, int line, const std::string& message) {
  throw Error(std::string(file) + ":" + std::to_string(line) + ": " + message);
}

// The dtype data_ptr<T>() accepts for T; 16-bit floats are read through void or uint16_t.
template <class T> struct DtypeOf { static constexpr bool kKnown = false; };
#define PLAIN_BINDING_DTYPE(T, D) \
  template <> struct DtypeOf<T> { static constexpr bool kKnown = true; static constexpr ScalarType kType = D; }
PLAIN_BINDING_DTYPE(float, kFloat32);
PLAIN_BINDING_DTYPE(double, kFloat64);
PLAIN_BINDING_DTYPE(int8_t, kInt8);
PLAIN_BINDING_DTYPE(uint8_t, kUInt8);
PLAIN_BINDING_DTYPE(int16_t, kInt16);
PLAIN_BINDING_DTYPE(int32_t, kInt32);
PLAIN_BINDING_DTYPE(int64_t, kInt64);
PLAIN_BINDING_DTYPE(bool, kBool);
#undef PLAIN_BINDING_DTYPE

}  // namespace detail

// PLAIN_CHECK(condition, message) throws plain::Error with the file, line and message when the
// condition is false.
#define PLAIN_CHECK(condition, message) \
  do {                                  \
    if (!(condition)) ::plain::detail::Fail(__FILE__, __LINE__, (message)); \
  } while (false)

// Tensor is a view of a tensor the call received or made. It owns nothing.
struct Tensor {
  void* data = nullptr;
  int32_t dim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  // in elements
  ScalarType dtype = kFloat32;
  int32_t device = -1;             // -1: CPU; otherwise the CUDA device's index
  int64_t handle = -1;             // which of the call's tensors this views (set by binding.cpp)

  bool is_cuda() const { return device >= 0; }
  bool is_cpu() const { return device < 0; }
  ScalarType scalar_type() const { return dtype; }
  std::size_t element_size() const { return ElementSize(dtype); }
  int64_t numel() const {
    int64_t n = 1;
    for (int32_t d = 0; d < dim; ++d) n *= sizes[d];
    return n;
  }
  // size(d) and stride(d); a negative d counts from the end, as in torch.
  int64_t size(int d) const { return sizes[Axis(d)]; }
  int64_t stride(int d) const { return strides[Axis(d)]; }
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int32_t d = dim - 1; d >= 0; --d) {
      if (sizes[d] != 1 && strides[d] != expected) return false;
      expected *= sizes[d];
    }
    return true;
  }
  // data_ptr<T>() is the first element as T*; a T that does not match the dtype throws.
  template <class T>
  T* data_ptr() const {
    if constexpr (!std::is_void_v<T>) {
      static_assert(detail::DtypeOf<std::remove_cv_t<T>>::kKnown || sizeof(T) == 2,
                    "data_ptr<T>: T must be a C++ number type, void, or a 2-byte type for 16-bit floats");
      if constexpr (detail::DtypeOf<std::remove_cv_t<T>>::kKnown) {
        if (detail::DtypeOf<std::remove_cv_t<T>>::kType != dtype) {
          throw Error("data_ptr<T>: T does not match the tensor's dtype");
        }
      } else if (dtype != kFloat16 && dtype != kBFloat16) {
        throw Error("data_ptr<T>: a 2-byte T reads only float16 or bfloat16 tensors");
      }
    }
    return static_cast<T*>(data);
  }

 private:
  int Axis(int d) const {
    int axis = d < 0 ? d + dim : d;
    if (axis < 0 || axis >= dim) {
      throw Error("dimension " + std::to_string(d) + " out of range for a " + std::to_string(dim) +
                  "-d tensor");
    }
    return axis;
  }
};

// Made by binding.cpp (torch's allocator, so the memory is torch's and is checked like torch's).
// empty: a new contiguous tensor of `sizes` and `dtype` on `device` (-1: CPU).
Tensor empty(const std::vector<int64_t>& sizes, ScalarType dtype, int32_t device);
// empty_like: a new contiguous tensor of `like`'s sizes, dtype and device.
Tensor empty_like(const Tensor& like);
// current_stream is the cudaStream_t (as void*) that kernels on `device` must run on; nullptr for
// the CPU.
void* current_stream(int32_t device);

namespace detail {

enum class Kind : int32_t { kVoid, kTensor, kFloat, kInt, kBool, kTensorList };

struct Value {
  Kind kind = Kind::kVoid;
  Tensor tensor;
  double f = 0;
  int64_t i = 0;
  bool b = false;
  std::vector<Tensor> list;
};

using Invoker = void (*)(const Value* args, Value* result);

// Export describes one PLAIN_EXPORT: binding.cpp defines a Python function for each.
struct Export {
  std::string name;
  std::string file;
  std::vector<Kind> params;
  Kind result = Kind::kVoid;
  std::vector<std::string> arg_names;  // empty, or one per parameter
  Invoker invoke = nullptr;
};

// Register records an export (defined in binding.cpp).
void Register(Export e);

template <class T>
constexpr Kind KindOf() {
  using U = std::remove_cv_t<std::remove_reference_t<T>>;
  if constexpr (std::is_same_v<U, Tensor>) return Kind::kTensor;
  else if constexpr (std::is_same_v<U, std::vector<Tensor>>) return Kind::kTensorList;
  else if constexpr (std::is_same_v<U, bool>) return Kind::kBool;
  else if constexpr (std::is_same_v<U, double> || std::is_same_v<U, float>) return Kind::kFloat;
  else if constexpr (std::is_same_v<U, int64_t> || std::is_same_v<U, int>) return Kind::kInt;
  else if constexpr (std::is_void_v<U>) return Kind::kVoid;
  else static_assert(sizeof(U) == 0,
                     "PLAIN_EXPORT: parameters may be plain::Tensor, double, float, int64_t, int or "
                     "bool; results also std::vector<plain::Tensor> or void");
}

template <class T>
T Unpack(const Value& v) {
  using U = std::remove_cv_t<std::remove_reference_t<T>>;
  static_assert(KindOf<U>() != Kind::kTensorList && KindOf<U>() != Kind::kVoid,
                "PLAIN_EXPORT: a parameter cannot be a list of tensors or void");
  if constexpr (std::is_same_v<U, Tensor>) return v.tensor;
  else if constexpr (std::is_same_v<U, bool>) return v.b;
  else if constexpr (std::is_floating_point_v<U>) return static_cast<U>(v.f);
  else return static_cast<U>(v.i);
}

template <class T>
void Pack(T&& r, Value* out) {
  using U = std::remove_cv_t<std::remove_reference_t<T>>;
  out->kind = KindOf<U>();
  if constexpr (std::is_same_v<U, Tensor>) out->tensor = r;
  else if constexpr (std::is_same_v<U, std::vector<Tensor>>) out->list = std::forward<T>(r);
  else if constexpr (std::is_same_v<U, bool>) out->b = r;
  else if constexpr (std::is_floating_point_v<U>) out->f = r;
  else out->i = r;
}

template <class R, class... A, std::size_t... I>
void CallWith(R (*fn)(A...), const Value* args, Value* out, std::index_sequence<I...>) {
  if constexpr (std::is_void_v<R>) {
    fn(Unpack<A>(args[I])...);
    out->kind = Kind::kVoid;
  } else {
    Pack(fn(Unpack<A>(args[I])...), out);
  }
}

template <class R, class... A>
void Call(R (*fn)(A...), const Value* args, Value* out) {
  CallWith(fn, args, out, std::index_sequence_for<A...>{});
}

template <class R, class... A>
bool Registrar(const char* name, const char* file, R (*)(A...),
               std::initializer_list<const char*> arg_names, Invoker invoke) {
  Export e;
  e.name = name;
  e.file = file;
  e.params = {KindOf<A>()...};
  e.result = KindOf<R>();
  for (const char* arg : arg_names) e.arg_names.emplace_back(arg);
  e.invoke = invoke;
  Register(std::move(e));
  return true;
}

}  // namespace detail
}  // namespace plain

// PLAIN_EXPORT(function, "arg", ...) makes `function` callable from Python as
// cuda_extension.<function>; the names (optional: all or none) allow keyword arguments.
#define PLAIN_EXPORT(function, ...)                                                        \
  static const bool plain_binding_export_##function = ::plain::detail::Registrar(         \
      #function, __FILE__, &function, {__VA_ARGS__},                                      \
      [](const ::plain::detail::Value* args, ::plain::detail::Value* result) {            \
        ::plain::detail::Call(&function, args, result);                                   \
      })
