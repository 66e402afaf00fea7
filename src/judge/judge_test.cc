// judge_test.cc — the pipeline's decisions, driven by a fake harness that answers (or misbehaves)
// as each test says. No torch needed: the fake "python" is a small script.
#include "judge/judge.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "common/host_environment.h"
#include "judge/judge_args.h"
#include "judge/judge_service.h"

namespace cuda_agent {
namespace {

// The fake interpreter: `fake -m cuda_agent_harness JOB --spec SPEC`. It looks up JOB in the
// behaviour file beside it: "result:<json>" writes that JSON as the result, "signal:N" kills
// itself, "sleep" hangs, "rules:<json>" writes that JSON unless the spec says "rules": false
// (then {"ok": true}); a job not listed answers {"ok": true}.
constexpr const char* kFakePython = R"(#!/usr/bin/env python3
import json, os, signal, sys, time
job, spec_path = sys.argv[3], sys.argv[5]
spec = json.load(open(spec_path))
behaviour = json.load(open(os.path.join(os.path.dirname(sys.argv[0]), "behaviour.json")))
action = behaviour.get(job, "result:{\"ok\": true}")
if action.startswith("signal:"):
    os.kill(os.getpid(), int(action.split(":")[1]))
if action == "sleep":
    time.sleep(60)
if action.startswith("rules:"):
    action = "result:" + (action[len("rules:"):] if spec.get("rules", True) else '{"ok": true}')
result = json.loads(action[len("result:"):])
json.dump(result, open(spec["result_path"], "w"))
)";

constexpr const char* kToolchainCpu =
    R"(result:{"ok": true, "python_version": "3.11", "torch_version": "2.13.0", "cxx11_abi": true,
    "include_dirs": [], "library_dirs": [], "python_include": "/usr/include/python3.11",
    "torch_init_path": "/nonexistent"})";

class JudgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = MakeTempDir(fs::temp_directory_path(), "judge-test").value();
    ASSERT_TRUE(WriteFileAtomic(home_ / "python" / "cuda_agent_harness" / "__main__.py", "").ok());
    fs::copy(fs::path(CUDA_AGENT_SOURCE_DIR) / "templates", home_ / "templates",
             fs::copy_options::recursive);
    ASSERT_TRUE(WriteFileAtomic(home_ / "bin" / "fake-python", kFakePython).ok());
    chmod((home_ / "bin" / "fake-python").c_str(), 0755);
    env_.home = home_;
    env_.python = (home_ / "bin" / "fake-python").string();
    cand_ = home_ / "cand";
    ASSERT_TRUE(WriteFileAtomic(cand_ / "model_new.py", "class ModelNew: pass\n").ok());
    task_.code =
        "class Model: pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n";
    task_.id = TaskIdForCode(task_.code);
    task_.name = "fake";
    opt_.device = Device::kCpu;
    opt_.cache_dir = home_ / "cache";
    opt_.candidate_timeout_s = 3;
  }
  void TearDown() override {
    unsetenv(kTestingEnv);
    CaptureHostEnvironment();
    fs::remove_all(home_);
  }

  void Behave(const Json& behaviour) {
    ASSERT_TRUE(WriteJsonFile(home_ / "bin" / "behaviour.json", behaviour).ok());
  }
  JudgeResult Run() { return Judge(env_).Run(&task_, cand_, opt_); }

  fs::path home_, cand_;
  HarnessEnv env_;
  Task task_;
  JudgeOptions opt_;
};

TEST_F(JudgeTest, MalformedToolchainAnswerIsAnInternalErrorNotACrash) {
  Behave({{"toolchain", R"(result:{"ok": true, "torch_version": 5, "include_dirs": "x"})"}});
  JudgeResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kInternalError);
  EXPECT_FALSE(r.reward.has_value()) << "an infrastructure failure is never a −1";
  EXPECT_NE(r.reason.find("internal error"), std::string::npos) << r.reason;
}

TEST_F(JudgeTest, StaticFailureIsAVerdict) {
  Behave(
      {{"static",
        R"(result:{"ok": false, "error_kind": "syntax_error", "reason": "model_new.py:3: invalid syntax"})"}});
  JudgeResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kVerdict);
  EXPECT_EQ(r.reward, -1);
  EXPECT_EQ(r.stage, Stage::kStatic);
  EXPECT_EQ(r.error_kind, "syntax_error");
  EXPECT_EQ(r.reason, "model_new.py:3: invalid syntax");
}

TEST_F(JudgeTest, MissingDefinitionsAreTaskErrorsBeforeAnyJob) {
  Behave(Json::object());
  task_.code = "class Model: pass\ndef get_init_inputs(): return []\n";
  JudgeResult r = Run();
  EXPECT_EQ(r.outcome, Outcome::kTaskError);
  EXPECT_EQ(r.stage, Stage::kTask);
  EXPECT_NE(r.reason.find("get_inputs()"), std::string::npos);
}

TEST_F(JudgeTest, BuildFailureNamesTheMissingSources) {
  Behave({{"toolchain", kToolchainCpu}});
  JudgeResult r = Run();  // the candidate has no kernels/
  EXPECT_EQ(r.reward, -1);
  EXPECT_EQ(r.stage, Stage::kBuild);
  EXPECT_NE(r.reason.find("no kernel sources"), std::string::npos) << r.reason;
  EXPECT_EQ(r.ToJson()["correct"], false);
}

TEST(JudgeResultTest, StageSummaryListsTheStagesThatTookTimeInPipelineOrder) {
  JudgeResult r;
  EXPECT_EQ(r.StageSummary(), "");
  r.stage_seconds = {{"profile_candidate", 0.46},
                     {"build", 1.26},
                     {"static", 0.01},
                     {"lease_wait", 3.14},
                     {"verify", 0.99},
                     {"total", 6.0},
                     {"verify_ready_wait", 0.72},
                     {"profile_ready_wait", 0.0}};
  EXPECT_EQ(r.StageSummary(),
            "build 1.3 s, verify set-up wait 0.7 s, verify 1.0 s, lease wait 3.1 s, profile 0.5 s");
}

TEST_F(JudgeTest, ToJsonHasEveryDocumentedField) {
  Behave(
      {{"static",
        R"(result:{"ok": false, "error_kind": "missing_model_new", "reason": "model_new.py missing"})"}});
  Json j = Run().ToJson();
  for (const char* key : {"schema_version", "reward", "correct", "stage", "outcome", "reason",
                          "error_kind", "device", "reward_schedule", "policy", "task", "candidate",
                          "build", "verify", "timing", "kernels", "env", "stage_seconds"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["schema_version"], kJudgeSchemaVersion);
  EXPECT_EQ(j["policy"]["name"], "strict") << "strict is the default precision policy";
  EXPECT_EQ(j["policy"]["tolerance"]["mode"], "scaled");
}

TEST_F(JudgeTest, UnknownRewardScheduleIsInternal) {
  Behave(Json::object());
  opt_.reward_schedule = "nope";
  EXPECT_EQ(Run().outcome, Outcome::kInternalError);
}

// The candidate is read once: what is scanned, built and hashed is the value given to Run, not
// what the folder holds by the time a stage gets there.
TEST_F(JudgeTest, TheCandidateValueIsJudgedNotTheFolder) {
  Behave({{"static", R"(result:{"ok": false, "error_kind": "stop_here", "reason": "stopped"})"}});
  ASSERT_TRUE(WriteFileAtomic(cand_ / "kernels" / "k.cu", "__global__ void k() {}\n").ok());
  Result<Candidate> candidate = Candidate::FromFolder(cand_);
  ASSERT_TRUE(candidate.ok());
  ASSERT_TRUE(WriteFileAtomic(cand_ / "kernels" / "k.cu", "void f() { dlopen(0, 0); }\n").ok());
  JudgeResult r = Judge(env_).Run(&task_, candidate.value(), opt_, cand_);
  EXPECT_EQ(r.error_kind, "stop_here") << r.reason;
  EXPECT_EQ(r.candidate["hash"], candidate->hash());
  EXPECT_EQ(r.candidate["dir"], cand_.string());
}

TEST_F(JudgeTest, ACandidateAsDataIsScannedWithoutAFolder) {
  Behave(Json::object());
  Result<Candidate> candidate = Candidate::FromFiles(
      {{"model_new.py", "class ModelNew: pass\n"}, {"kernels/x.cu", "void f() { fork(); }\n"}});
  ASSERT_TRUE(candidate.ok());
  InProcessJudge judge(env_);
  JudgeResult r = judge.Evaluate(
      {.task = task_, .candidate = candidate.value(), .options = opt_, .workspace = {}});
  EXPECT_EQ(r.stage, Stage::kStatic);
  EXPECT_EQ(r.error_kind, "static_rule");
  EXPECT_EQ(r.reason.rfind("process_escape: kernels/x.cu:1: ", 0), 0u) << r.reason;
  EXPECT_EQ(r.candidate["hash"], candidate->hash());
}

TEST_F(JudgeTest, AMissingModelNewIsNamedByItsFolder) {
  Behave(Json::object());
  fs::remove(cand_ / "model_new.py");
  JudgeResult r = Run();
  EXPECT_EQ(r.reward, -1);
  EXPECT_EQ(r.error_kind, "missing_model_new");
  EXPECT_EQ(r.reason, "model_new.py not found in " + fs::absolute(cand_).string());
}

TEST_F(JudgeTest, AnUnreadableFolderIsAVerdict) {
  Behave(Json::object());
  JudgeResult r = Judge(env_).Run(&task_, home_ / "no-such-folder", opt_);
  EXPECT_EQ(r.outcome, Outcome::kVerdict);
  EXPECT_EQ(r.reward, -1);
  EXPECT_EQ(r.stage, Stage::kStatic);
  EXPECT_EQ(r.error_kind, "unreadable_candidate");
  EXPECT_NE(r.reason.find("no-such-folder"), std::string::npos) << r.reason;
}

// The test-only switch: refused unless CUDA_AGENT_TESTING=1, then both rule sets are skipped and
// the result is marked as no verdict.
constexpr const char* kAstRuleBroken =
    R"(rules:{"ok": false, "error_kind": "static_rule", "reason": "host_thread: model_new.py:1: x"})";

TEST_F(JudgeTest, SkippingTheStaticRulesNeedsTheTestingVariable) {
  Behave({{"static", kAstRuleBroken}});
  opt_.test_skip_static = true;
  for (const char* value : {"", "0", "true"}) {
    if (*value == 0) {
      unsetenv(kTestingEnv);
    } else {
      setenv(kTestingEnv, value, 1);
    }
    CaptureHostEnvironment();
    JudgeResult r = Run();
    EXPECT_EQ(r.outcome, Outcome::kInternalError) << value;
    EXPECT_NE(r.reason.find("CUDA_AGENT_TESTING=1"), std::string::npos) << r.reason;
    EXPECT_TRUE(r.static_skipped);
    EXPECT_FALSE(r.reward.has_value());
    EXPECT_TRUE(r.jobs.empty()) << "nothing may run: " << r.jobs.dump();
  }
}

TEST_F(JudgeTest, SkippingTheStaticRulesSkipsBothRuleSetsAndIsNoVerdict) {
  Behave({{"static", kAstRuleBroken}, {"toolchain", kToolchainCpu}});
  ASSERT_TRUE(WriteFileAtomic(cand_ / "kernels" / "x.cpp", "void f() { fork(); }\n").ok());
  JudgeResult normal = Run();
  EXPECT_EQ(normal.stage, Stage::kStatic);
  EXPECT_EQ(normal.error_kind, "static_rule");
  EXPECT_FALSE(normal.static_skipped);
  EXPECT_EQ(normal.ToJson()["static_skipped"], false);
  EXPECT_FALSE(normal.ToJson().contains("unofficial_reward"));
  fs::remove(cand_ / "kernels" / "x.cpp");
  EXPECT_EQ(Run().error_kind, "static_rule") << "the AST rules alone stop it too";

  setenv(kTestingEnv, "1", 1);
  CaptureHostEnvironment();
  opt_.test_skip_static = true;
  ASSERT_TRUE(WriteFileAtomic(cand_ / "kernels" / "x.cpp", "void f() { fork(); }\n").ok());
  JudgeResult r = Run();
  EXPECT_EQ(r.stage, Stage::kBuild) << "past both rule sets: " << r.reason;
  EXPECT_TRUE(r.violations.empty()) << r.violations.dump();
  EXPECT_TRUE(r.static_skipped);
  EXPECT_FALSE(r.reward.has_value()) << "never a reward without the static rules";
  EXPECT_EQ(r.unofficial_reward, -1);
  EXPECT_EQ(r.correct, false);
  EXPECT_EQ(r.reason.rfind(kStaticSkippedNote, 0), 0u) << r.reason;
  Json j = r.ToJson();
  EXPECT_EQ(j["static_skipped"], true);
  EXPECT_TRUE(j["reward"].is_null());
  EXPECT_EQ(j["unofficial_reward"], -1);
  EXPECT_EQ(r.ToText().rfind("NOT A VERDICT", 0), 0u) << r.ToText();
  // The shape checks stay: model_new.py must still be there.
  fs::remove(cand_ / "model_new.py");
  EXPECT_EQ(Run().error_kind, "missing_model_new");
}

TEST_F(JudgeTest, TheSwitchIsNeverRenderedAsAFlag) {
  opt_.test_skip_static = true;
  for (const std::string& arg : JudgeOptionArgs(opt_)) {
    EXPECT_EQ(arg.find("static"), std::string::npos) << arg;
  }
}

// Baselines per GPU: two GPUs of one model keep an entry each, and a GPU without one (a new host,
// imported baselines) falls back to the model's.
TEST(BaselineKeysTest, EachGpuFindsItsOwnEntryElseTheModels) {
  fs::path dir = MakeTempDir(fs::temp_directory_path(), "baseline-keys").value();
  Result<BaselineStore> store = BaselineStore::Open(dir / "store.sqlite");
  ASSERT_TRUE(store.ok()) << store.status().message();
  const BaselineKey model{"task1", "NVIDIA H100 80GB HBM3", "2.11.0", "strict", "eager", 5, 20};
  const Json gpu0 = {{"copy_us", 188.0}, {"gemm_us", 900.0}, {"device_uuid", "GPU-aaaa"}};
  const Json gpu1 = {{"copy_us", 209.0}, {"gemm_us", 910.0}, {"device_uuid", "GPU-bbbb"}};
  std::optional<BaselineKey> own0 = OwnGpuKey(model, gpu0), own1 = OwnGpuKey(model, gpu1);
  ASSERT_TRUE(own0 && own1);
  EXPECT_EQ(own0->device, "NVIDIA H100 80GB HBM3 @ GPU-aaaa");
  EXPECT_EQ(own0->task_id, "task1");
  EXPECT_EQ(own0->target, "eager");
  EXPECT_FALSE(OwnGpuKey(model, Json{{"copy_us", 1.0}}).has_value()) << "no UUID: the model only";
  EXPECT_FALSE(OwnGpuKey(model, Json()).has_value());

  EXPECT_FALSE(FindBaseline(store.value(), model, own0).has_value());
  ASSERT_TRUE(store->Put(model, {{"time_us", 10.0}}).ok());  // imported: the model's only
  EXPECT_EQ(FindBaseline(store.value(), model, own0)->summary["time_us"], 10.0);
  ASSERT_TRUE(store->Put(*own1, {{"time_us", 11.0}}).ok());
  EXPECT_EQ(FindBaseline(store.value(), model, own1)->summary["time_us"], 11.0) << "GPU 1's own";
  EXPECT_EQ(FindBaseline(store.value(), model, own0)->summary["time_us"], 10.0)
      << "GPU 0 falls back";
  EXPECT_EQ(FindBaseline(store.value(), model, std::nullopt)->summary["time_us"], 10.0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cuda_agent
