#!/usr/bin/env bash
# binding_compilers.sh — how long one torch-style binding file takes to compile with g++ and the
# judge's `core` precompiled header (src/builder/precompiled_header.cc, CUDA variant) against clang
# with its precompiled-header options (-fpch-instantiate-templates, -fpch-codegen): issue 22's
# "binding edit" (docs/benchmarks.md, 2026-11-27 eleventh session). Needs torch (PYTHON), the CUDA
# headers and g++; CLANG (default clang++-16, else clang++) for the clang rows; EXTRA_CFLAGS are added
# to every compile (e.g. -isystem DIR for a header a CPU build of torch lacks).
#   bash bench/binding_compilers.sh            # examples/linear_gelu's cuda_correct binding
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
CLANG=${CLANG:-$(command -v clang++-16 || command -v clang++ || echo clang++)}
W=$(mktemp -d /tmp/binding-compilers.XXXXXX)
cp examples/linear_gelu/candidates/cuda_correct/kernels/linear_gelu_binding.cpp "$W/"
# clang does not take an attribute between `namespace` and the name: the registry's hidden
# visibility is left out for it (the measurement is of the compile, not the symbol's visibility).
sed 's/#if defined(__GNUC__)$/#if defined(__GNUC__) \&\& !defined(__clang__)/' \
  templates/workspace/binding_registry.h > "$W/binding_registry.h"
sed -i 's#"../binding_registry.h"#"binding_registry.h"#' "$W/linear_gelu_binding.cpp"
printf '%s\n' '#pragma once' '#include <torch/types.h>' '#include <torch/csrc/utils/pybind.h>' \
  '#include <pybind11/pybind11.h>' '#include <cuda_runtime.h>' '#include <c10/cuda/CUDAGuard.h>' \
  '#include <c10/cuda/CUDAStream.h>' > "$W/pch.h"
TI=$($PY -c "import torch.utils.cpp_extension as e; print(' '.join('-isystem ' + d for d in e.include_paths()))")
PI=$($PY -c "import sysconfig; print(sysconfig.get_paths()['include'])")
ABI=$($PY -c "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))")
CU=${CUDA_HOME:-/usr/local/cuda}/include
F="-O3 -std=c++20 -fPIC -w -DTORCH_EXTENSION_NAME=cuda_extension -DTORCH_API_INCLUDE_EXTENSION_H
   -D_GLIBCXX_USE_CXX11_ABI=$ABI -I$W $TI -isystem $PI -DCUDA_AGENT_DEVICE_CUDA -isystem $CU ${EXTRA_CFLAGS:-}"
cd "$W"
# t CMD...: runs CMD, prints its wall seconds (and the first lines of its errors when it fails).
t() {
  local s=$EPOCHREALTIME
  "$@" >/dev/null 2>err.txt || { echo "FAILED: ${*:0:80}"; head -3 err.txt; }
  awk -v a="$s" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f s", b - a }'
}
echo "g++ header: $(t g++ $F -x c++-header pch.h -o pch.h.gch)"
for i in 1 2 3; do echo "g++ binding $i: $(t g++ -c $F -include "$W/pch.h" linear_gelu_binding.cpp -o g.o)"; done
echo "clang header (instantiated): $(t $CLANG $F -x c++-header pch.h -o pch_i.pch -fpch-instantiate-templates)"
for i in 1 2 3; do echo "clang binding (instantiated) $i: $(t $CLANG -c $F -include-pch pch_i.pch linear_gelu_binding.cpp -o c1.o)"; done
echo "clang header (codegen): $(t $CLANG $F -x c++-header pch.h -o pch_c.pch -fpch-instantiate-templates -fpch-codegen)"
echo "clang header's object: $(t $CLANG -c $F pch_c.pch -o pch_c.o)"
for i in 1 2 3; do echo "clang binding (codegen) $i: $(t $CLANG -c $F -include-pch pch_c.pch linear_gelu_binding.cpp -o c2.o)"; done
for i in 1 2; do echo "clang binding (codegen, -O2) $i: $(t $CLANG -c ${F/-O3/-O2} -include-pch pch_c.pch linear_gelu_binding.cpp -o c3.o)"; done
size g.o c1.o c2.o pch_c.o
echo "link with the header's object: $(t g++ -shared -o x.so c2.o pch_c.o)"
rm -rf "$W"
