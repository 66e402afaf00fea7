// http_client.cc — HttpPost over libcurl, resolved with dlopen/dlsym at first use.
#include "llm/http_client.h"

#include "common/host_environment.h"

// The curl headers give the types and constants only; every function is called through CurlApi.
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>

namespace cuda_agent {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxCollectedBody = 4 << 20;

// CurlApi holds the few libcurl functions we use.
struct CurlApi {
  CURLcode (*global_init)(long flags) = nullptr;
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL* handle, CURLoption option, ...) = nullptr;
  CURLcode (*easy_perform)(CURL* handle) = nullptr;
  void (*easy_cleanup)(CURL* handle) = nullptr;
  const char* (*easy_strerror)(CURLcode code) = nullptr;
  curl_slist* (*slist_append)(curl_slist* list, const char* text) = nullptr;
  void (*slist_free_all)(curl_slist* list) = nullptr;
};

struct LoadedCurl {
  CurlApi api;
  Status status;
};

template <typename Fn>
bool Resolve(void* library, const char* name, Fn* slot) {
  *slot = reinterpret_cast<Fn>(dlsym(library, name));
  return *slot != nullptr;
}

// LoadCurl loads libcurl once per process ($CUDA_AGENT_LIBCURL names another file, for tests).
const LoadedCurl& LoadCurl() {
  static LoadedCurl loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string& override_path = HostValue(HostVar::kLibcurl);
    std::string path = !override_path.empty() ? override_path : "libcurl.so.4";
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = dlerror();
      loaded.status =
          FailedPrecondition("cannot load " + path + " (" + (why ? why : "unknown error") +
                             "); the LLM clients need libcurl: apt-get install libcurl4");
      return;
    }
    CurlApi& api = loaded.api;
    bool all = Resolve(library, "curl_global_init", &api.global_init) &&
               Resolve(library, "curl_easy_init", &api.easy_init) &&
               Resolve(library, "curl_easy_setopt", &api.easy_setopt) &&
               Resolve(library, "curl_easy_perform", &api.easy_perform) &&
               Resolve(library, "curl_easy_cleanup", &api.easy_cleanup) &&
               Resolve(library, "curl_easy_strerror", &api.easy_strerror) &&
               Resolve(library, "curl_slist_append", &api.slist_append) &&
               Resolve(library, "curl_slist_free_all", &api.slist_free_all);
    if (!all) {
      loaded.status =
          FailedPrecondition(path + " lacks a libcurl function we need; is it libcurl?");
      return;
    }
    if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      loaded.status = FailedPrecondition("curl_global_init failed");
    }
  });
  return loaded;
}

// Transfer is the state the libcurl callbacks share during one HttpPost.
struct Transfer {
  const HttpPostRequest* request = nullptr;
  HttpPostResponse* response = nullptr;
  Clock::time_point last_byte;
  bool stalled = false;
  bool aborted = false;
};

std::string Trim(std::string_view s) {
  size_t begin = 0;
  size_t end = s.size();
  while (begin < end && (s[begin] == ' ' || s[begin] == '\t')) ++begin;
  while (end > begin &&
         (s[end - 1] == ' ' || s[end - 1] == '\t' || s[end - 1] == '\r' || s[end - 1] == '\n')) {
    --end;
  }
  return std::string(s.substr(begin, end - begin));
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  transfer->last_byte = Clock::now();
  std::string_view line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new status line (after a 100 Continue, or a redirect): the headers start over.
    transfer->response->headers.clear();
    size_t space = line.find(' ');
    transfer->response->status = space == std::string_view::npos
                                     ? 0
                                     : std::atoi(std::string(line.substr(space + 1, 3)).c_str());
    return size * count;
  }
  size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name = Trim(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    transfer->response->headers[name] = Trim(line.substr(colon + 1));
  }
  return size * count;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  transfer->last_byte = Clock::now();
  std::string_view bytes(data, size * count);
  int status = transfer->response->status;
  if (transfer->request->on_body && status >= 200 && status < 300) {
    if (!transfer->request->on_body(bytes)) {
      transfer->aborted = true;
      return 0;  // libcurl ends the transfer with CURLE_WRITE_ERROR
    }
    return bytes.size();
  }
  std::string& body = transfer->response->body;
  if (body.size() < kMaxCollectedBody)
    body.append(bytes.substr(0, kMaxCollectedBody - body.size()));
  return bytes.size();
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* transfer = static_cast<Transfer*>(user);
  double idle = std::chrono::duration<double>(Clock::now() - transfer->last_byte).count();
  if (idle > transfer->request->stall_timeout_s) {
    transfer->stalled = true;
    return 1;  // abort: CURLE_ABORTED_BY_CALLBACK
  }
  return 0;
}

// NoProxyList is $no_proxy (or $NO_PROXY) plus the loopback names: a local vLLM must never be
// reached through a proxy set for the outside world. (CURLOPT_NOPROXY replaces the variable, hence
// the merge.)
std::string NoProxyList() {
  std::string list;
  for (HostVar var : {HostVar::kNoProxy, HostVar::kNoProxyUpper}) {
    if (const std::string& value = HostValue(var); !value.empty()) {
      list = value;
      break;
    }
  }
  if (!list.empty()) list += ",";
  return list + "localhost,127.0.0.1,::1";
}

std::string FormatSeconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

}  // namespace

Status HttpAvailable() { return LoadCurl().status; }

Result<HttpPostResponse> HttpPost(const HttpPostRequest& request,
                                  HttpTransportError* transport_error) {
  HttpTransportError ignored;
  HttpTransportError& error_kind = transport_error != nullptr ? *transport_error : ignored;
  error_kind = HttpTransportError::kNone;
  const LoadedCurl& curl = LoadCurl();
  if (!curl.status.ok()) {
    error_kind = HttpTransportError::kUnavailable;
    return curl.status;
  }
  const CurlApi& api = curl.api;
  std::unique_ptr<CURL, void (*)(CURL*)> handle(api.easy_init(), api.easy_cleanup);
  if (!handle) {
    error_kind = HttpTransportError::kUnavailable;
    return Internal("curl_easy_init failed");
  }
  curl_slist* header_list = nullptr;
  for (const std::string& header : request.headers)
    header_list = api.slist_append(header_list, header.c_str());
  header_list =
      api.slist_append(header_list, "Expect:");  // no 100-continue round trip for big bodies
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(header_list, api.slist_free_all);

  HttpPostResponse response;
  Transfer transfer;
  transfer.request = &request;
  transfer.response = &response;
  transfer.last_byte = Clock::now();
  char error_text[CURL_ERROR_SIZE] = {0};

  CURL* h = handle.get();
  api.easy_setopt(h, CURLOPT_URL, request.url.c_str());
  api.easy_setopt(h, CURLOPT_POST, 1L);
  api.easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
  api.easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  api.easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
  api.easy_setopt(h, CURLOPT_HEADERFUNCTION, &OnHeader);
  api.easy_setopt(h, CURLOPT_HEADERDATA, &transfer);
  api.easy_setopt(h, CURLOPT_WRITEFUNCTION, &OnBody);
  api.easy_setopt(h, CURLOPT_WRITEDATA, &transfer);
  api.easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  api.easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &OnProgress);
  api.easy_setopt(h, CURLOPT_XFERINFODATA, &transfer);
  api.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                  static_cast<long>(request.connect_timeout_s * 1000));
  api.easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(request.total_timeout_s * 1000));
  api.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: we run threads
  api.easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  api.easy_setopt(h, CURLOPT_ERRORBUFFER, error_text);
  std::string no_proxy = NoProxyList();
  api.easy_setopt(h, CURLOPT_NOPROXY, no_proxy.c_str());

  Clock::time_point start = Clock::now();
  CURLcode rc = api.easy_perform(h);
  response.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (rc == CURLE_OK) return response;

  std::string detail = error_text[0] != '\0' ? error_text : api.easy_strerror(rc);
  std::string where = "POST " + request.url + ": ";
  if (transfer.aborted) {
    error_kind = HttpTransportError::kAborted;
    return Internal(where + "transfer aborted by the reader");
  }
  if (transfer.stalled) {
    error_kind = HttpTransportError::kStall;
    return DeadlineExceeded(where + "no byte received for " +
                            FormatSeconds(request.stall_timeout_s) + " s (stall timeout)");
  }
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      error_kind = HttpTransportError::kTimeout;
      return DeadlineExceeded(where + "timed out (" + detail + ")");
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
      error_kind = HttpTransportError::kConnect;
      return Internal(where + "cannot connect (" + detail + ")");
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      error_kind = HttpTransportError::kUnavailable;
      return InvalidArgument(where + detail);
    default:
      error_kind = HttpTransportError::kBroken;
      return Internal(where + "transfer broken (" + detail + ")");
  }
}

bool IsLoopbackUrl(const std::string& url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return false;
  std::string rest = url.substr(scheme_end + 3);
  std::string host;
  if (!rest.empty() && rest[0] == '[') {
    host = rest.substr(0, rest.find(']') + 1);
  } else {
    host = rest.substr(0, rest.find_first_of(":/"));
  }
  std::transform(host.begin(), host.end(), host.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "[::1]";
}

}  // namespace cuda_agent
