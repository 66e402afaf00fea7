// http_server.h — the project's one door to the HTTP server library (cpp-httplib). Requests and
// answers are plain values; one handler sees every request (the routes live in server/http_api).
// The library itself is linked into a plugin, libcuda_agent_http.so next to the binary
// (http_server_library.cc), loaded when a server starts: every other command of the binary keeps
// needing nothing but libstdc++.
//
//   Result<std::unique_ptr<HttpServer>> s = StartHttpServer({.port = 0}, handler);
//   std::cout << "listening on http://127.0.0.1:" << (*s)->port() << "\n";
//   (*s)->Run();  // until Stop() from another thread
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace cuda_agent {

struct HttpRequest {
  std::string method;  // GET, POST, ...
  std::string path;    // without the query
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  // refused_status: not 0 when the library refused the request before it reached a route (413: the
  // body is over the limit, 400: a malformed request); the handler only words the answer.
  int refused_status = 0;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;         // 0: a free port (port() tells which)
  size_t threads = 64;  // connections served at once (a kept-alive connection holds one)
  size_t max_body_bytes = 16u << 20;
  int backlog = 1024;  // pending connections the kernel keeps (the library's own is 5)
  double read_timeout_s = 30;
  double write_timeout_s = 30;
  double keep_alive_timeout_s = 5;
  size_t keep_alive_max_requests = 10000;
};

class HttpServer {
 public:
  virtual ~HttpServer() = default;
  virtual int port() const = 0;
  // Run serves until Stop(); returns after the running handlers finished.
  virtual void Run() = 0;
  // Stop closes the listening socket; callable from any thread.
  virtual void Stop() = 0;
};

// StartHttpServer loads the plugin, binds host:port and returns the server ready to Run.
Result<std::unique_ptr<HttpServer>> StartHttpServer(const HttpServerOptions& options,
                                                    HttpHandler handler);

// The plugin's entry point (C linkage, looked up by name): a bound server, or null with `error`.
using MakeHttpServerFn = HttpServer* (*)(const HttpServerOptions& options, HttpHandler handler,
                                         std::string* error);
inline constexpr const char* kMakeHttpServerSymbol = "cuda_agent_make_http_server";
inline constexpr const char* kHttpPluginName = "libcuda_agent_http.so";

}  // namespace cuda_agent
