// link_stubs.h — the extension's link without reading torch's libraries. ld reads the dynamic
// symbol tables of every library on its command line, and torch's are large (libtorch_cpu and
// libtorch_cuda: gigabytes): on the H100 host that made the link 0.3–0.5 s, a third of a `.cu`
// edit's build. A shared library's undefined symbols are not checked when it is linked (there is
// no -z defs: they are bound when Python loads it, against the libraries torch has loaded), so of
// each library the link needs only the name it records as DT_NEEDED. It therefore links against
// stubs: empty libraries carrying the real ones' SONAMEs, made once per set of libraries in the
// judge's cache, named with --no-as-needed so that every one is recorded, as a link against the
// real libraries records the ones it uses. The loader then finds the real libraries by SONAME
// (torch has loaded them all) or through the rpath, which still names their folders.
//
//   std::optional<fs::path> stubs = LinkStubs(cache_dir, {"c10", "torch"}, library_dirs);
//   if (stubs) argv.insert(argv.end(), {"-L" + stubs->string(), "-Wl,--no-as-needed", "-lc10",
//                                       "-ltorch", "-Wl,--as-needed"});
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/status.h"

namespace cuda_agent {

// FindLibrary: lib<name>.so in the first of `dirs` that holds it (the -L search), or nothing.
std::optional<fs::path> FindLibrary(const std::string& name, const std::vector<std::string>& dirs);

// ReadSoname: a 64-bit little-endian ELF shared library's DT_SONAME, "" when it has none.
Result<std::string> ReadSoname(const fs::path& library);

// LinkStubs returns a folder holding a stub lib<name>.so for each of `names` (each found in
// `dirs`), made under cache_dir/link-stubs/ the first time (keyed by the real files' paths, sizes
// and times), or nothing when a library is not in `dirs`, cannot be read, or a stub cannot be
// made: the caller then links against the real libraries. Empty `cache_dir`: nothing.
std::optional<fs::path> LinkStubs(const fs::path& cache_dir, const std::vector<std::string>& names,
                                  const std::vector<std::string>& dirs);

}  // namespace cuda_agent
