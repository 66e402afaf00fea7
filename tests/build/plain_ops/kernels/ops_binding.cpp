// Plain bindings that exercise binding.cpp's adapter (tests/build/test_plain_binding.py).
#include <cstdint>
#include <vector>

#include "../plain_binding.h"

// y = (x * a + b), negated when asked.
static plain::Tensor scale_add(const plain::Tensor& x, double a, int64_t b, bool negate) {
  PLAIN_CHECK(x.dtype == plain::kFloat32 && x.is_contiguous(), "x must be contiguous float32");
  plain::Tensor y = plain::empty_like(x);
  const float* in = x.data_ptr<float>();
  float* out = y.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    float v = static_cast<float>(in[i] * a + static_cast<double>(b));
    out[i] = negate ? -v : v;
  }
  return y;
}
PLAIN_EXPORT(scale_add, "x", "a", "b", "negate");

// The first and the last row of a 2-d tensor, as views of its memory.
static std::vector<plain::Tensor> end_rows(plain::Tensor x) {
  PLAIN_CHECK(x.dim == 2, "x must be 2-d");
  plain::Tensor first = x;
  first.dim = 1;
  first.sizes[0] = x.sizes[1];
  first.strides[0] = x.strides[1];
  plain::Tensor last = first;
  last.data = x.data_ptr<float>() + (x.sizes[0] - 1) * x.strides[0];
  return {first, last};
}
PLAIN_EXPORT(end_rows);

// A view that claims to be another call tensor than any there is.
static plain::Tensor forged_handle(const plain::Tensor& x) {
  plain::Tensor f = x;
  f.handle = 7;
  return f;
}
PLAIN_EXPORT(forged_handle, "x");

// A view reaching past the end of its tensor's memory.
static plain::Tensor past_the_end(const plain::Tensor& x) {
  plain::Tensor f = x;
  f.sizes[0] = x.sizes[0] * 2;
  return f;
}
PLAIN_EXPORT(past_the_end, "x");

// size(-1) * 1000 + stride(0).
static double shape_code(const plain::Tensor& x) {
  return static_cast<double>(x.size(-1) * 1000 + x.stride(0));
}
PLAIN_EXPORT(shape_code, "x");

static int64_t axis_out_of_range(const plain::Tensor& x) { return x.size(x.dim); }
PLAIN_EXPORT(axis_out_of_range, "x");

static void must_be_zero(int64_t code) { PLAIN_CHECK(code == 0, "code must be 0"); }
PLAIN_EXPORT(must_be_zero, "code");

static int64_t read_as_int32(const plain::Tensor& x) { return *x.data_ptr<int32_t>(); }
PLAIN_EXPORT(read_as_int32, "x");

static bool is_cpu_and_contiguous(const plain::Tensor& x) { return x.is_cpu() && x.is_contiguous(); }
PLAIN_EXPORT(is_cpu_and_contiguous, "x");
