// toolchain.h — moved to harness/toolchain.h (the harness's `toolchain` job discovers it, and the
// job sandbox policy in harness/job_policy.h needs it). This forwarding header keeps the includes
// of code not yet updated compiling; include harness/toolchain.h in new code.
#pragma once

#include "harness/toolchain.h"
