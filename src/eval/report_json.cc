// report_json.cc — report.json: the report model as it is (docs/bench.md), for machines.
#include "eval/report.h"

namespace cuda_agent {
namespace {

class JsonReport : public ReportRenderer {
 public:
  std::string FileName() const override { return "report.json"; }
  std::string Render(const Json& report, const fs::path&) const override {
    return report.dump(2) + "\n";
  }
};

}  // namespace

std::unique_ptr<ReportRenderer> MakeJsonReport() { return std::make_unique<JsonReport>(); }

}  // namespace cuda_agent
