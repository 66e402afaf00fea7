// job_test.cc — the job's JSON form and id, the Redis URL and JudgeResult read back (no Redis).
#include "queue/job.h"

#include <gtest/gtest.h>

#include "queue/redis_client.h"

namespace cuda_agent {
namespace {

const char* const kTaskCode =
    "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    "def get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n";

JudgeRequest Request() {
  Task task;
  task.code = kTaskCode;
  task.id = TaskIdForCode(task.code);
  task.name = "identity";
  task.level = 1;
  task.ops = {"identity"};
  JudgeOptions options;
  options.device = Device::kCpu;
  options.until = Stage::kVerify;
  options.checks = 2;
  options.cache_dir = "/somewhere/local";  // never travels
  Candidate c = Candidate::FromFiles({{"model_new.py", "import torch\n"},
                                      {"kernels/a.cpp", "int f() { return 1; }\n"}})
                    .value();
  return {.task = task, .candidate = c, .options = options, .workspace = {}};
}

TEST(RedisUrlTest, ParsesTheFormsAndNamesTheExpectedOneOtherwise) {
  Result<RedisUrl> full = ParseRedisUrl("redis://10.0.0.5:6390/3");
  ASSERT_TRUE(full.ok()) << full.status().message();
  EXPECT_EQ(full->host, "10.0.0.5");
  EXPECT_EQ(full->port, 6390);
  EXPECT_EQ(full->db, 3);
  Result<RedisUrl> bare = ParseRedisUrl("redis://queue");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->port, 6379);
  EXPECT_EQ(bare->db, 0);
  for (const char* bad : {"http://h:1", "redis://", "redis://h:0", "redis://h:port",
                          "redis://h:1/x", "redis://u:p@h:1"}) {
    Result<RedisUrl> r = ParseRedisUrl(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("redis://HOST[:PORT][/DB]"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(bad), std::string::npos);
  }
}

TEST(JobTest, RoundTripsThroughJsonWithItsIdAndOnlyTheTravellingOptions) {
  Result<JudgeJob> job = MakeJob(Request());
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(job->id.size(), 24u);
  Json j = job->ToJson();
  EXPECT_EQ(j["version"], kJobVersion);
  EXPECT_FALSE(j["options"].contains("cache_dir"));
  Result<JudgeJob> back = JobFromJson(ParseJson(j.dump(), "job").value());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->id, job->id);
  EXPECT_EQ(back->task.code, kTaskCode);
  EXPECT_EQ(back->task.ops, std::vector<std::string>{"identity"});
  EXPECT_EQ(back->candidate.hash(), job->candidate.hash());
  EXPECT_EQ(back->options.until, Stage::kVerify);
  EXPECT_EQ(back->options.checks, 2);
  // The worker's own fields come from its host.
  JudgeOptions local;
  local.cache_dir = "/worker/cache";
  local.build_jobs = 7;
  JudgeRequest r = back->Request(local);
  EXPECT_EQ(r.options.cache_dir, "/worker/cache");
  EXPECT_EQ(r.options.build_jobs, 7);
  EXPECT_EQ(r.options.device, Device::kCpu);
  EXPECT_EQ(r.options.checks, 2);
}

TEST(JobTest, IdDependsOnTaskCandidateOptionsAndTheNoopMark) {
  JudgeRequest a = Request();
  std::string id = MakeJob(a)->id;
  EXPECT_EQ(MakeJob(Request())->id, id);  // content, not time
  JudgeRequest b = Request();
  b.options.checks = 3;
  EXPECT_NE(MakeJob(b)->id, id);
  JudgeRequest c = Request();
  c.candidate = Candidate::FromFiles({{"model_new.py", "import torch  # changed\n"}}).value();
  EXPECT_NE(MakeJob(c)->id, id);
  JudgeRequest d = Request();
  d.options.cache_dir = "/elsewhere";  // a local field: same job
  EXPECT_EQ(MakeJob(d)->id, id);
  EXPECT_NE(JobId(a.task, a.candidate, a.options, /*noop=*/true), id);
}

TEST(JobTest, MalformedJobsNameWhatIsWrong) {
  Json good = MakeJob(Request())->ToJson();
  auto reason = [](const Json& j) {
    Result<JudgeJob> r = JobFromJson(j);
    return r.ok() ? std::string("accepted") : r.status().message();
  };
  EXPECT_EQ(reason(Json::array()), "a job must be a JSON object");
  Json v = good;
  v["version"] = 2;
  EXPECT_NE(reason(v).find("job version 2 is not supported"), std::string::npos);
  Json no_task = good;
  no_task.erase("task");
  EXPECT_EQ(reason(no_task), "missing field 'task'");
  Json tampered = good;
  tampered["task"]["code"] = std::string(kTaskCode) + "# more\n";
  EXPECT_NE(reason(tampered).find("does not match its content"), std::string::npos);
  Json escape = good;
  escape["candidate"] = {{"../etc/passwd", "x"}};
  EXPECT_NE(reason(escape).find("candidate: "), std::string::npos) << reason(escape);
  Json shape = good;
  shape["task"]["code"] = "print('no model')\n";
  EXPECT_NE(reason(shape).find("task: "), std::string::npos) << reason(shape);
  Json checks = good;
  checks["options"]["checks"] = "five";
  EXPECT_EQ(reason(checks), "options: field 'checks' must be an integer");
  Json policy = good;
  policy["options"]["policy"] = "loose";
  EXPECT_NE(reason(policy).find("options: "), std::string::npos);
}

TEST(JobTest, JudgeResultReadsBackWhatToJsonWrote) {
  JudgeResult r;
  r.Fail(Stage::kVerify, "mismatch", "check 2: outputs differ");
  r.device = "cpu";
  r.timing = {{"candidate", {{"time_us", 12.5}}}};
  r.jobs = Json::array({{{"name", "candidate"}}});
  Result<JudgeResult> back = JudgeResultFromJson(r.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ToJson(), r.ToJson());
  JudgeResult noop = NoopResult(Device::kCpu);
  Result<JudgeResult> n = JudgeResultFromJson(noop.ToJson());
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(n->reward.has_value());
  EXPECT_EQ(n->error_kind, "noop");
  Json bad = r.ToJson();
  bad["outcome"] = "maybe";
  EXPECT_FALSE(JudgeResultFromJson(bad).ok());
}

// The test-only switch that skips the static rules never travels: a job cannot ask a worker for it,
// and a result made with it keeps its mark (and no reward) through the queue.
TEST(JobTest, SkippingTheStaticRulesNeverTravels) {
  JudgeRequest request = Request();
  request.options.test_skip_static = true;
  Result<JudgeJob> job = MakeJob(request);
  ASSERT_TRUE(job.ok()) << job.status().message();
  for (const auto& [key, value] : job->ToJson()["options"].items()) {
    EXPECT_EQ(key.find("static"), std::string::npos) << key;
  }
  Json forged = job->ToJson()["options"];
  forged["test_skip_static"] = true;
  forged["skip_static"] = true;
  Result<JudgeOptions> read = OptionsFromJson(forged, JudgeOptions{});
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_FALSE(read->test_skip_static);
  JudgeOptions local;
  local.test_skip_static = true;
  EXPECT_FALSE(job->Request(local).options.test_skip_static);

  JudgeResult r;
  r.Fail(Stage::kVerify, "forbidden_op", "check 0: aten.relu");
  r.MarkStaticSkipped();
  Result<JudgeResult> back = JudgeResultFromJson(r.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->static_skipped);
  EXPECT_FALSE(back->reward.has_value());
  EXPECT_EQ(back->unofficial_reward, -1);
  EXPECT_EQ(back->ToJson(), r.ToJson());
  Json forged_result = r.ToJson();
  forged_result["reward"] = 3;  // a reward next to the mark is dropped, not believed
  EXPECT_FALSE(JudgeResultFromJson(forged_result)->reward.has_value());
}

}  // namespace
}  // namespace cuda_agent
