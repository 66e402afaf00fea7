// openapi.cc — the OpenAPI 3.1 document of the HTTP face (GET /v1/openapi.json), written next to
// the route table it describes; http_api_test checks that both list the same routes.
#include "server/http_api.h"

namespace cuda_agent {
namespace {

Json Ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }

Json JsonContent(const Json& schema) { return {{"application/json", {{"schema", schema}}}}; }

Json Answer(const std::string& description, const Json& schema) {
  return {{"description", description}, {"content", JsonContent(schema)}};
}

Json ErrorAnswer(const std::string& description) { return Answer(description, Ref("Error")); }

// Errors every authenticated route may answer.
Json WithCommonErrors(Json responses) {
  responses["401"] = ErrorAnswer("missing or wrong bearer token");
  responses["503"] = ErrorAnswer("the server is shutting down");
  return responses;
}

Json Object(Json properties, std::vector<std::string> required = {}) {
  Json schema = {{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) schema["required"] = required;
  return schema;
}

Json StrictObject(Json properties, std::vector<std::string> required = {}) {
  Json schema = Object(std::move(properties), std::move(required));
  schema["additionalProperties"] = false;
  return schema;
}

Json Schemas() {
  Json reward = {{"type", {"integer", "null"}},
                 {"description", "-1, 1, 2 or 3; null when the judgement was not a verdict"}};
  Json reference = {
      {"type", "string"},
      {"description", "FILE.py, SUITE#level1/19_ReLU or DATA.jsonl#ID, as judge --task"}};
  Json inline_task =
      StrictObject({{"source", {{"type", "string"}}}, {"name", {{"type", "string"}}}}, {"source"});
  Json task = {{"oneOf", Json::array({reference, inline_task})}};
  Json tool = Object({{"name", {{"type", "string"}}},
                      {"description", {{"type", "string"}}},
                      {"parameters", {{"type", "object"}}}},
                     {"name", "description", "parameters"});
  return {
      {"Error",
       Object({{"error", Object({{"code", {{"type", "string"}}}, {"message", {{"type", "string"}}}},
                                {"code", "message"})}},
              {"error"})},
      {"Task", task},
      {"Tool", tool},
      {"JudgeResult",
       {{"type", "object"},
        {"description", "the judge's result, as `judge --json` prints it (docs/judge.md)"}}},
      {"Health",
       Object(
           {{"version", {{"type", "string"}}},
            {"status", {{"enum", {"ok", "stopping"}}}},
            {"devices",
             {{"type", "array"},
              {"items", Object({{"device", {{"type", "string"}}},
                                {"state", {{"enum", {"idle", "busy", "full"}}}},
                                {"queue_depth", {{"type", "integer"}}},
                                {"running", {{"type", "integer"}}},
                                {"workers",
                                 {{"type", "integer"},
                                  {"description",
                                   "judgements of this device at once (serve --redis: the "
                                   "live consumers of its stream)"}}}})}}},
            {"queue_depth", {{"type", "integer"}}},
            {"sessions_open", {{"type", "integer"}}},
            {"max_sessions", {{"type", "integer"}}},
            {"judge", {{"type", "string"}, {"description", "in-process or redis://HOST:PORT/DB"}}},
            {"workers",
             {{"type", "array"},
              {"description",
               "serve --redis: the live `cuda-agent worker` processes (empty when "
               "judging is in-process)"},
              {"items", Ref("Worker")}}},
            {"queues",
             {{"type", "object"},
              {"description",
               "serve --redis: per device stream {\"waiting\", \"pending\", \"dead_letter\"}"},
              {"additionalProperties", Object({{"waiting", {{"type", "integer"}}},
                                               {"pending", {{"type", "integer"}}},
                                               {"dead_letter", {{"type", "integer"}}}})}}},
            {"workers_error",
             {{"type", "string"},
              {"description", "serve --redis: why the workers' state could not be read"}}}},
           {"version", "devices", "queue_depth", "sessions_open", "judge", "workers"})},
      {"Worker",
       Object(
           {{"name", {{"type", "string"}}},
            {"host", {{"type", "string"}}},
            {"pid", {{"type", "integer"}}},
            {"device", {{"enum", {"cuda", "cpu"}}}},
            {"started_at", {{"type", "number"}}},
            {"heartbeat_at", {{"type", "number"}, {"description", "Unix seconds"}}},
            {"heartbeat_age_s", {{"type", "number"}}},
            {"state", {{"enum", {"running", "stopping", "stopped"}}}},
            {"consumers",
             {{"type", "array"},
              {"items", Object({{"name", {{"type", "string"}}},
                                {"gpu", {{"type", "string"}}},
                                {"state",
                                 {{"type", "string"},
                                  {"description", "starting, idle, judging, storing or stopped"}}},
                                {"job_id", {{"type", "string"}}},
                                {"since", {{"type", "number"}}},
                                {"jobs_done", {{"type", "integer"}}},
                                {"jobs_failed", {{"type", "integer"}}},
                                {"dead_lettered", {{"type", "integer"}}}})}}}},
           {"name", "device", "heartbeat_age_s", "consumers"})},
      {"OpenSessionRequest",
       StrictObject({{"task", Ref("Task")},
                     {"device", {{"enum", {"cuda", "cpu"}}}},
                     {"policy", {{"enum", {"strict", "tf32-fair", "paper"}}}},
                     {"turn_limit", {{"type", "integer"}, {"minimum", 1}}},
                     {"ttl_s", {{"type", "number"}, {"exclusiveMinimum", 0}}}},
                    {"task"})},
      {"SessionOpened",
       Object(
           {{"session_id", {{"type", "string"}}},
            {"system_prompt", {{"type", "string"}}},
            {"task_message", {{"type", "string"}}},
            {"tools", {{"type", "array"}, {"items", Ref("Tool")}}},
            {"turn_limit", {{"type", "integer"}}},
            {"expires_at", {{"type", "number"}, {"description", "Unix seconds"}}}},
           {"session_id", "system_prompt", "task_message", "tools", "turn_limit", "expires_at"})},
      {"SessionStatus",
       Object({{"session_id", {{"type", "string"}}},
               {"status", {{"enum", {"open", "graded", "expired", "interrupted", "closed"}}}},
               {"calls", {{"type", "integer"}}},
               {"turn_limit", {{"type", "integer"}}},
               {"task", Ref("Task")},
               {"device", {{"type", "string"}}},
               {"policy", {{"type", "string"}}},
               {"created_at", {{"type", "number"}}},
               {"expires_at", {{"type", "number"}}},
               {"reason", {{"type", "string"}}},
               {"grade", Object({{"reward", reward}, {"result", Ref("JudgeResult")}})}},
              {"session_id", "status", "calls", "turn_limit", "task", "device", "policy",
               "created_at", "expires_at"})},
      {"CallRequest",
       StrictObject({{"call_id", {{"type", "string"}, {"minLength", 1}, {"maxLength", 128}}},
                     {"tool", {{"type", "string"}}},
                     {"arguments",
                      {{"oneOf", {{{"type", "object"}}, {{"type", "string"}}}},
                       {"description", "an object, or the text a model emitted"}}}},
                    {"call_id", "tool"})},
      {"CallAnswer", Object({{"call_id", {{"type", "string"}}},
                             {"observation", Object({{"text", {{"type", "string"}}},
                                                     {"is_error", {{"type", "boolean"}}}},
                                                    {"text", "is_error"})},
                             {"calls_used", {{"type", "integer"}}},
                             {"turn_limit", {{"type", "integer"}}},
                             {"replayed", {{"type", "boolean"}}}},
                            {"call_id", "observation", "calls_used", "turn_limit", "replayed"})},
      {"GradeAnswer", Object({{"session_id", {{"type", "string"}}},
                              {"reward", reward},
                              {"result", Ref("JudgeResult")}},
                             {"session_id", "reward", "result"})},
      {"EvaluateRequest",
       StrictObject({{"task", Ref("Task")},
                     {"files",
                      {{"type", "object"},
                       {"additionalProperties", {{"type", "string"}}},
                       {"description", "kernels/** sources and headers, model_new.py"}}},
                     {"device", {{"enum", {"cuda", "cpu"}}}},
                     {"policy", {{"enum", {"strict", "tf32-fair", "paper"}}}},
                     {"wait", {{"type", "boolean"}, {"default", true}}}},
                    {"task", "files"})},
      {"Verdict",
       Object({{"reward", reward}, {"result", Ref("JudgeResult")}}, {"reward", "result"})},
      {"Job", Object({{"job_id", {{"type", "string"}}},
                      {"status", {{"enum", {"queued", "running", "done", "interrupted"}}}},
                      {"reward", reward},
                      {"result", Ref("JudgeResult")}},
                     {"job_id", "status"})},
  };
}

Json IdParameter(const std::string& what) {
  return Json::array({{{"name", "id"},
                       {"in", "path"},
                       {"required", true},
                       {"schema", {{"type", "string"}}},
                       {"description", what}}});
}

}  // namespace

Json OpenApiDocument(const std::string& version) {
  const Json session_id = IdParameter("the session_id POST /v1/sessions answered");
  Json paths = {
      {"/",
       {{"get",
         {{"summary", "the status page (HTML): the token or the read-only status token"},
          {"security", {{{"bearer", Json::array()}}, {{"status", Json::array()}}}},
          {"responses",
           WithCommonErrors(
               {{"200",
                 {{"description", "the page"},
                  {"content", {{"text/html", {{"schema", {{"type", "string"}}}}}}}}}})}}}}},
      {"/v1/health",
       {{"get",
         {{"summary", "version, devices and their queues, open sessions (no token needed)"},
          {"security", Json::array()},
          {"responses", {{"200", Answer("the server's state", Ref("Health"))}}}}}}},
      {"/v1/tools",
       {{"get",
         {{"summary", "the tools a session gives a model"},
          {"responses",
           WithCommonErrors(
               {{"200", Answer("the tools",
                               Object({{"tools", {{"type", "array"}, {"items", Ref("Tool")}}}},
                                      {"tools"}))}})}}}}},
      {"/v1/sessions",
       {{"post",
         {{"summary", "open a session: a fresh workspace for the task"},
          {"requestBody",
           {{"required", true}, {"content", JsonContent(Ref("OpenSessionRequest"))}}},
          {"responses",
           WithCommonErrors({{"201", Answer("the session", Ref("SessionOpened"))},
                             {"400", ErrorAnswer("malformed body, unknown field, bad task")},
                             {"413", ErrorAnswer("body too large")},
                             {"429", ErrorAnswer("too many open sessions (Retry-After)")}})}}}}},
      {"/v1/sessions/{id}",
       {{"get",
         {{"summary", "a session's state (also after it ended)"},
          {"parameters", session_id},
          {"responses", WithCommonErrors({{"200", Answer("the session", Ref("SessionStatus"))},
                                          {"404", ErrorAnswer("unknown session")}})}}},
        {"delete",
         {{"summary", "close a session: stop its jobs, remove its folder (the record stays)"},
          {"parameters", session_id},
          {"responses",
           WithCommonErrors({{"200", Answer("closed", Object({{"session_id", {{"type", "string"}}},
                                                              {"status", {{"const", "closed"}}}}))},
                             {"404", ErrorAnswer("unknown session")}})}}}}},
      {"/v1/sessions/{id}/calls",
       {{"post",
         {{"summary", "run one tool call (a repeated call_id answers the stored observation)"},
          {"parameters", session_id},
          {"requestBody", {{"required", true}, {"content", JsonContent(Ref("CallRequest"))}}},
          {"responses",
           WithCommonErrors(
               {{"200",
                 Answer("the observation (tool errors are observations)", Ref("CallAnswer"))},
                {"400", ErrorAnswer("malformed body or unknown field")},
                {"404", ErrorAnswer("unknown session")},
                {"409", ErrorAnswer("turn limit reached, or the session is graded/closed/expired")},
                {"413", ErrorAnswer("body too large")}})}}}}},
      {"/v1/sessions/{id}/grade",
       {{"post",
         {{"summary", "judge the workspace with the full pipeline; ends the episode"},
          {"parameters", session_id},
          {"requestBody",
           {{"required", false}, {"content", JsonContent(StrictObject(Json::object()))}}},
          {"responses",
           WithCommonErrors(
               {{"200", Answer("the grade (repeated: the stored one)", Ref("GradeAnswer"))},
                {"404", ErrorAnswer("unknown session")},
                {"409", ErrorAnswer("the session is closed, expired or interrupted")},
                {"429", ErrorAnswer("the device's judgement queue is full (Retry-After)")}})}}}}},
      {"/v1/evaluate",
       {{"post",
         {{"summary", "judge inline files against a task (single-turn)"},
          {"requestBody", {{"required", true}, {"content", JsonContent(Ref("EvaluateRequest"))}}},
          {"responses",
           WithCommonErrors(
               {{"200", Answer("the verdict (wait: true)", Ref("Verdict"))},
                {"202", Answer("queued (wait: false)",
                               Object({{"job_id", {{"type", "string"}}}}, {"job_id"}))},
                {"400", ErrorAnswer("malformed body, bad task, file names outside the candidate")},
                {"413", ErrorAnswer("body too large")},
                {"429", ErrorAnswer("the device's judgement queue is full (Retry-After)")}})}}}}},
      {"/v1/jobs/{id}",
       {{"get",
         {{"summary", "an evaluation job's state and result"},
          {"parameters", IdParameter("the job_id POST /v1/evaluate answered")},
          {"responses", WithCommonErrors({{"200", Answer("the job", Ref("Job"))},
                                          {"404", ErrorAnswer("unknown job")}})}}}}},
      {"/v1/openapi.json",
       {{"get",
         {{"summary", "this document"},
          {"responses",
           WithCommonErrors({{"200", Answer("OpenAPI 3.1", {{"type", "object"}})}})}}}}},
  };
  return {{"openapi", "3.1.0"},
          {"info",
           {{"title", "cuda-agent serve"},
            {"version", version.empty() ? "0" : version},
            {"description",
             "The CUDA Agent environment over HTTP: sessions with coding tools in a sandboxed "
             "workspace, graded by the judge (docs/server.md)."}}},
          {"servers", {{{"url", "/"}}}},
          {"security", {{{"bearer", Json::array()}}}},
          {"paths", paths},
          {"components",
           {{"schemas", Schemas()},
            {"securitySchemes",
             {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}},
              {"status",
               {{"type", "http"},
                {"scheme", "basic"},
                {"description",
                 "the status page only: password the server's --status-token (or --token), any "
                 "user name"}}}}}}}};
}

}  // namespace cuda_agent
