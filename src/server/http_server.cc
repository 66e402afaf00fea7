// http_server.cc — loads libcuda_agent_http.so (next to the binary, or in ../lib) and asks it for
// a bound server.
#include "server/http_server.h"

#include <dlfcn.h>

#include "common/fs.h"
#include "harness/client.h"

namespace cuda_agent {

Result<std::unique_ptr<HttpServer>> StartHttpServer(const HttpServerOptions& options,
                                                    HttpHandler handler) {
  const fs::path exe = ExecutablePath();
  std::string tried;
  void* library = nullptr;
  for (const fs::path& candidate : {exe.parent_path() / kHttpPluginName,
                                    exe.parent_path().parent_path() / "lib" / kHttpPluginName}) {
    tried += (tried.empty() ? "" : ", ") + candidate.string();
    if (!fs::exists(candidate)) continue;
    // Kept loaded for the life of the process: the server's code lives in it.
    library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      return FailedPrecondition("cannot load " + candidate.string() + ": " + dlerror() +
                                " (serve needs Debian's libcpp-httplib0.11: scripts/setup.sh)");
    }
    break;
  }
  if (library == nullptr) {
    return FailedPrecondition(std::string("serve needs ") + kHttpPluginName +
                              " next to the binary (looked at " + tried + ")");
  }
  auto make = reinterpret_cast<MakeHttpServerFn>(dlsym(library, kMakeHttpServerSymbol));
  if (make == nullptr) return Internal(std::string(kHttpPluginName) + " has no server entry point");
  std::string error;
  HttpServer* server = make(options, std::move(handler), &error);
  if (server == nullptr) return FailedPrecondition(error);
  return std::unique_ptr<HttpServer>(server);
}

}  // namespace cuda_agent
