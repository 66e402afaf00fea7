// Names one argument of a function that takes two: importing the module must fail, saying so.
#include <cstdint>

#include "../plain_binding.h"

static int64_t add_ints(int64_t a, int64_t b) { return a + b; }
PLAIN_EXPORT(add_ints, "a");
