// request_checks_test.cc — the one validation of a request's task, device, policy, files, session
// limits and call names: what each accepts, and that each refusal is a 400 that names the field.
#include "server/request_checks.h"

#include <gtest/gtest.h>

#include "common/device.h"
#include "judge/precision.h"

namespace cuda_agent {
namespace {

const char* kModel =
    "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    "def get_inputs():\n    return [torch.ones(2)]\ndef get_init_inputs():\n    return []\n";

std::string Refusal(const std::optional<ApiError>& e) {
  if (!e) return "";
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->code, "invalid_argument");
  return e->message;
}
template <typename T>
std::string Refusal(const ApiResult<T>& r) {
  return r.ok() ? "" : Refusal(r.error);
}

TEST(RequestChecks, TaskIsAReferenceOrInlineSource) {
  ApiResult<TaskInput> reference = ParseTaskInput("suite#level1/19_ReLU");
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ(reference.value->reference, "suite#level1/19_ReLU");
  EXPECT_FALSE(reference.value->source);
  ApiResult<TaskInput> inline_task = ParseTaskInput({{"source", kModel}, {"name", "mine"}});
  ASSERT_TRUE(inline_task.ok());
  EXPECT_EQ(*inline_task.value->source, kModel);
  EXPECT_EQ(inline_task.value->name, "mine");

  EXPECT_EQ(Refusal(ParseTaskInput("")), "task must not be empty");
  EXPECT_NE(Refusal(ParseTaskInput(3)).find("reference string or"), std::string::npos);
  EXPECT_NE(Refusal(ParseTaskInput({{"source", "x"}, {"code", "y"}})).find("unknown field 'code'"),
            std::string::npos);
  EXPECT_EQ(Refusal(ParseTaskInput({{"name", "x"}})), "task.source must be the text of a model.py");
  EXPECT_EQ(Refusal(ParseTaskInput({{"source", "x"}, {"name", 5}})), "task.name must be a string");
}

TEST(RequestChecks, InlineTasksLoadAndNameTheirFile) {
  ApiResult<Task> task = LoadTaskInput(ParseTaskInput({{"source", kModel}}).value.value());
  ASSERT_TRUE(task.ok()) << task.error->message;
  EXPECT_EQ(task.value->name, "inline");
  EXPECT_EQ(task.value->id, TaskIdForCode(kModel));
  EXPECT_NE(
      Refusal(LoadTaskInput(ParseTaskInput({{"source", "x = 1"}}).value.value())).find("task: "),
      std::string::npos);
  EXPECT_NE(Refusal(LoadTaskInput(ParseTaskInput("/no/such/task.py").value.value())).find("task: "),
            std::string::npos);

  EXPECT_EQ(InlineTaskFileName(""), "task.py");
  EXPECT_EQ(InlineTaskFileName("relu.py"), "relu.py");
  EXPECT_EQ(InlineTaskFileName("../../etc/x y"), "_.._etc_x_y.py");
  EXPECT_EQ(InlineTaskFileName("..."), "task.py");
  std::string longest(64, 'a');
  longest += ".py";
  EXPECT_EQ(InlineTaskFileName(std::string(100, 'a')), longest);
}

TEST(RequestChecks, DeviceAndPolicyTakeTheDefaultsWhenEmpty) {
  JudgeOptions defaults;
  defaults.device = Device::kCpu;
  defaults.policy = MakePrecisionPolicy("strict").value();
  ApiResult<JudgeTarget> target = ResolveJudgeTarget("", "", defaults);
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target.value->device, Device::kCpu);
  EXPECT_EQ(target.value->policy.name, "strict");
  target = ResolveJudgeTarget("cuda", "paper", defaults);
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target.value->device, Device::kCuda);
  EXPECT_EQ(target.value->policy.name, "paper");
  EXPECT_EQ(Refusal(ResolveJudgeTarget("tpu", "", defaults)),
            "device 'tpu' is not one of cuda, cpu");
  EXPECT_EQ(Refusal(ResolveJudgeTarget("", "lax", defaults)).rfind("policy: ", 0), 0u);
}

TEST(RequestChecks, FilesAreACandidate) {
  ApiResult<Candidate> candidate =
      CandidateFromFiles({{"model_new.py", "print(1)"}, {"kernels/a.cu", "// a"}});
  ASSERT_TRUE(candidate.ok()) << candidate.error->message;
  EXPECT_FALSE(candidate.value->empty());
  EXPECT_EQ(Refusal(CandidateFromFiles(Json::array())),
            "files must be an object of file name to content");
  EXPECT_EQ(Refusal(CandidateFromFiles(Json())), "files must be an object of file name to content");
  EXPECT_EQ(Refusal(CandidateFromFiles(Json::object())),
            "files: no candidate files (kernels/*, model_new.py)");
  EXPECT_EQ(Refusal(CandidateFromFiles({{"model_new.py", 3}})).rfind("files: ", 0), 0u);
}

TEST(RequestChecks, SessionLimitsAndCallNames) {
  EXPECT_FALSE(CheckSessionLimits(0, 0));
  EXPECT_FALSE(CheckSessionLimits(kMaxTurnLimit, kMaxTtlS));
  EXPECT_EQ(Refusal(CheckSessionLimits(kMaxTurnLimit + 1, 0)).rfind("turn_limit", 0), 0u);
  EXPECT_EQ(Refusal(CheckSessionLimits(-1, 0)).rfind("turn_limit", 0), 0u);
  EXPECT_EQ(Refusal(CheckSessionLimits(1, kMaxTtlS * 2)).rfind("ttl_s", 0), 0u);
  EXPECT_EQ(Refusal(CheckSessionLimits(1, std::nan(""))).rfind("ttl_s", 0), 0u);

  EXPECT_FALSE(CheckCallNames("c-1", "Bash"));
  EXPECT_EQ(Refusal(CheckCallNames("", "Bash")).rfind("call_id", 0), 0u);
  EXPECT_EQ(Refusal(CheckCallNames("a b", "Bash")).rfind("call_id", 0), 0u);
  EXPECT_EQ(
      Refusal(CheckCallNames(std::string(kMaxCallIdChars + 1, 'c'), "Bash")).rfind("call_id", 0),
      0u);
  EXPECT_EQ(Refusal(CheckCallNames("c", "")).rfind("tool", 0), 0u);
  EXPECT_EQ(Refusal(CheckCallNames("c", std::string(kMaxToolNameChars + 1, 't'))).rfind("tool", 0),
            0u);
}

}  // namespace
}  // namespace cuda_agent
