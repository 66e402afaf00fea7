// A second binding file: plain exports from several files share the module.
#include <cstdint>

#include "../plain_binding.h"

static int64_t add_ints(int64_t a, int b) { return a + b; }
PLAIN_EXPORT(add_ints);
