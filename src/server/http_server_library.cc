// http_server_library.cc — libcuda_agent_http.so: the HTTP server of `serve` on cpp-httplib. Every
// request goes to the one handler of http_server.h; the library's own refusals (a body over the
// limit, a malformed request) reach it too, so every answer is worded by the API. What the library
// does not get right for a service under bursts is fixed here: the listen backlog (5 in this
// version), SO_REUSEPORT (two servers could share a port), Nagle's delay on small answers.
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>

#include "server/http_server.h"

namespace cuda_agent {
namespace {

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

void SplitSeconds(double seconds, time_t* sec, time_t* usec) {
  *sec = static_cast<time_t>(seconds);
  *usec = static_cast<time_t>((seconds - static_cast<double>(*sec)) * 1e6);
}

class HttplibServer : public HttpServer {
 public:
  HttplibServer(const HttpServerOptions& options, HttpHandler handler)
      : options_(options), handler_(std::move(handler)) {}

  bool Bind(std::string* error) {
    size_t threads = std::max<size_t>(options_.threads, 1);
    server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server_.set_payload_max_length(options_.max_body_bytes);
    time_t sec = 0, usec = 0;
    SplitSeconds(options_.read_timeout_s, &sec, &usec);
    server_.set_read_timeout(sec, usec);
    SplitSeconds(options_.write_timeout_s, &sec, &usec);
    server_.set_write_timeout(sec, usec);
    server_.set_keep_alive_timeout(
        static_cast<time_t>(std::max(1.0, options_.keep_alive_timeout_s)));
    server_.set_keep_alive_max_count(options_.keep_alive_max_requests);
    server_.set_socket_options([this](int sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      // Inherited by the accepted connections: answers leave at once, not after a delayed ACK.
      setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      listen_fd_ = sock;
    });
    auto route = [this](const httplib::Request& req, httplib::Response& res) {
      Answer(Translate(req, 0), res);
    };
    for (auto add : {&httplib::Server::Get, &httplib::Server::Post, &httplib::Server::Put,
                     &httplib::Server::Delete, &httplib::Server::Patch}) {
      (server_.*add)(".*", route);
    }
    server_.Options(".*", route);
    server_.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request& req, httplib::Response& res) {
          // Answers of the handler keep their body; only the library's own refusals are worded.
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          Answer(Translate(req, res.status), res);
          return httplib::Server::HandlerResponse::Handled;
        }));
    server_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
          res.status = 500;
          res.set_content(R"({"error": {"code": "internal", "message": "internal error"}})",
                          "application/json");
        });
    if (options_.port == 0) {
      port_ = server_.bind_to_any_port(options_.host);
    } else if (server_.bind_to_port(options_.host, options_.port)) {
      port_ = options_.port;
    } else {
      port_ = -1;
    }
    if (port_ <= 0) {
      *error = "cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
               " (in use, or not an address of this machine)";
      return false;
    }
    // The library listens with a backlog of 5: a burst of clients would see refused or retried
    // connections (a second each). Listening again on the bound socket only sets the backlog.
    if (listen_fd_ >= 0) ::listen(listen_fd_, std::max(options_.backlog, 16));
    return true;
  }

  int port() const override { return port_; }
  void Run() override { server_.listen_after_bind(); }
  void Stop() override { server_.stop(); }

 private:
  static HttpRequest Translate(const httplib::Request& req, int refused_status) {
    HttpRequest out;
    out.method = req.method;
    out.path = req.path;
    for (const auto& [name, value] : req.params) out.query.emplace(name, value);
    for (const auto& [name, value] : req.headers) out.headers.emplace(Lower(name), value);
    if (refused_status == 0) out.body = req.body;
    out.refused_status = refused_status;
    return out;
  }

  void Answer(const HttpRequest& request, httplib::Response& res) {
    HttpResponse answer = handler_(request);
    res.status = answer.status;
    for (const auto& [name, value] : answer.headers) res.set_header(name, value);
    res.set_content(answer.body, answer.content_type.c_str());
  }

  HttpServerOptions options_;
  HttpHandler handler_;
  httplib::Server server_;
  std::atomic<int> listen_fd_{-1};
  int port_ = -1;
};

}  // namespace
}  // namespace cuda_agent

// cuda_agent_make_http_server: a server bound to options.host:port, or null with `error` set.
// The name is the C symbol that dlsym looks up (kMakeHttpServerSymbol), not one of ours.
// NOLINTBEGIN(readability-identifier-naming)
extern "C" __attribute__((visibility("default"))) cuda_agent::HttpServer*
cuda_agent_make_http_server(const cuda_agent::HttpServerOptions& options,
                            cuda_agent::HttpHandler handler, std::string* error) {
  try {
    auto server = std::make_unique<cuda_agent::HttplibServer>(options, std::move(handler));
    if (!server->Bind(error)) return nullptr;
    return server.release();
  } catch (const std::exception& e) {
    *error = std::string("the HTTP server failed to start: ") + e.what();
    return nullptr;
  }
}
// NOLINTEND(readability-identifier-naming)
