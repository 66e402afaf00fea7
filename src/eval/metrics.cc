// metrics.cc — per-level metrics and their weighted combination.
#include "eval/metrics.h"

#include <cmath>
#include <map>

#include "judge/reward.h"

namespace cuda_agent {
namespace {

VersusMetrics VersusFor(const std::vector<const TaskScore*>& group, Baseline baseline) {
  VersusMetrics v;
  v.fast_p.assign(FastPThresholds().size(), 0.0);
  double log_sum = 0;
  for (const TaskScore* s : group) {
    std::optional<double> speedup = Speedup(*s, baseline);
    if (!speedup) continue;  // failed, or no time: 1.0× in geomean_all (log 0)
    ++v.with_speedup;
    const double base = baseline == Baseline::kEager ? *s->eager_us : *s->compile_us;
    if (FasterBy(*s->candidate_us, base, PaperSchedule::kMargin)) ++v.faster;
    for (size_t i = 0; i < FastPThresholds().size(); ++i) {
      if (*speedup > FastPThresholds()[i]) v.fast_p[i] += 1;
    }
    log_sum += std::log(*speedup);
  }
  const double n = static_cast<double>(group.size());
  v.faster_rate = v.faster / n;
  for (double& f : v.fast_p) f /= n;
  v.geomean_all = std::exp(log_sum / n);
  if (v.with_speedup > 0) v.geomean_correct = std::exp(log_sum / v.with_speedup);
  return v;
}

GroupMetrics GroupFor(int level, const std::vector<const TaskScore*>& group,
                      const MetricsOptions& opt) {
  GroupMetrics g;
  g.level = level;
  g.tasks = static_cast<int>(group.size());
  for (const TaskScore* s : group) g.correct += s->correct ? 1 : 0;
  if (g.tasks == 0) return g;  // an empty level has no rates
  g.pass_rate = static_cast<double>(g.correct) / g.tasks;
  if (opt.eager) g.eager = VersusFor(group, Baseline::kEager);
  if (opt.compile) g.compile = VersusFor(group, Baseline::kCompile);
  return g;
}

// Combine weights each non-empty level by its number of tasks. For rates and geomean_all this
// equals pooling all tasks; geomean_correct is the tasks-weighted mean of the levels' log geomeans,
// over the levels that have one.
std::optional<VersusMetrics> Combine(const std::vector<GroupMetrics>& levels,
                                     std::optional<VersusMetrics> GroupMetrics::*which, int total,
                                     bool measured) {
  if (!measured || total == 0) return std::nullopt;
  VersusMetrics v;
  v.fast_p.assign(FastPThresholds().size(), 0.0);
  double log_all = 0, log_correct = 0, weight_correct = 0;
  for (const GroupMetrics& g : levels) {
    if (g.tasks == 0) continue;
    const VersusMetrics& l = *(g.*which);
    const double w = static_cast<double>(g.tasks) / total;
    v.with_speedup += l.with_speedup;
    v.faster += l.faster;
    v.faster_rate += w * l.faster_rate;
    for (size_t i = 0; i < v.fast_p.size(); ++i) v.fast_p[i] += w * l.fast_p[i];
    log_all += w * std::log(*l.geomean_all);
    if (l.geomean_correct) {
      log_correct += g.tasks * std::log(*l.geomean_correct);
      weight_correct += g.tasks;
    }
  }
  v.geomean_all = std::exp(log_all);
  if (weight_correct > 0) v.geomean_correct = std::exp(log_correct / weight_correct);
  return v;
}

Json Optional(const std::optional<double>& v) { return v ? Json(*v) : Json(); }

Json VersusToJson(const std::optional<VersusMetrics>& v) {
  if (!v) return Json();
  Json fast = Json::object();
  for (size_t i = 0; i < FastPThresholds().size(); ++i)
    fast[FastPKey(FastPThresholds()[i])] = v->fast_p[i];
  return {{"with_speedup", v->with_speedup},
          {"faster", v->faster},
          {"faster_rate", v->faster_rate},
          {"geomean_all", Optional(v->geomean_all)},
          {"geomean_correct", Optional(v->geomean_correct)},
          {"fast_p", fast}};
}

Json GroupToJson(const GroupMetrics& g, bool overall) {
  return {{"level", overall ? Json("overall") : Json(g.level)},
          {"tasks", g.tasks},
          {"correct", g.correct},
          {"pass_rate", Optional(g.pass_rate)},
          {"eager", VersusToJson(g.eager)},
          {"compile", VersusToJson(g.compile)}};
}

}  // namespace

const std::vector<double>& FastPThresholds() {
  static const std::vector<double> thresholds = {0.0, 0.5, 0.8, 1.0, 1.5, 2.0};
  return thresholds;
}

std::string FastPKey(double p) {
  char key[32];
  std::snprintf(key, sizeof(key), "%g", p);
  return key;
}

std::optional<double> Speedup(const TaskScore& score, Baseline baseline) {
  const std::optional<double>& base =
      baseline == Baseline::kEager ? score.eager_us : score.compile_us;
  if (!score.correct || !base || !score.candidate_us) return std::nullopt;
  if (!(*base > 0) || !(*score.candidate_us > 0)) return std::nullopt;
  return *base / *score.candidate_us;
}

SuiteMetrics ComputeMetrics(const std::vector<TaskScore>& scores, const std::vector<int>& levels,
                            const MetricsOptions& options) {
  std::map<int, std::vector<const TaskScore*>> by_level;
  for (int level : levels) by_level[level];
  for (const TaskScore& s : scores) by_level[s.level].push_back(&s);
  SuiteMetrics m;
  int total = 0;
  for (const auto& [level, group] : by_level) {
    m.levels.push_back(GroupFor(level, group, options));
    total += static_cast<int>(group.size());
  }
  GroupMetrics& o = m.overall;
  o.level = -1;
  o.tasks = total;
  double pass = 0;
  for (const GroupMetrics& g : m.levels) {
    o.correct += g.correct;
    if (g.pass_rate) pass += static_cast<double>(g.tasks) / total * *g.pass_rate;
  }
  if (total > 0) o.pass_rate = pass;
  o.eager = Combine(m.levels, &GroupMetrics::eager, total, options.eager);
  o.compile = Combine(m.levels, &GroupMetrics::compile, total, options.compile);
  return m;
}

Json MetricsToJson(const SuiteMetrics& metrics) {
  Json levels = Json::array();
  for (const GroupMetrics& g : metrics.levels) levels.push_back(GroupToJson(g, false));
  return {{"fast_p_thresholds", FastPThresholds()},
          {"overall", GroupToJson(metrics.overall, true)},
          {"levels", levels}};
}

}  // namespace cuda_agent
