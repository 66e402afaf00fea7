// report_markdown.cc — report.md: the headline, then every table of the report (report.h) as a
// markdown table: the paper's results, the correct-only geometric means, fast_p, the tasks and the
// tasks that did not pass with their reasons.
#include <sstream>

#include "eval/report.h"

namespace cuda_agent {
namespace {

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

class MarkdownReport : public ReportRenderer {
 public:
  std::string FileName() const override { return "report.md"; }

  std::string Render(const Json& report, const fs::path& out_dir) const override {
    std::ostringstream md;
    md << "# Benchmark report\n\n" << Headline(report) << "\n";
    for (const ReportTable& t : ReportTables(report, out_dir)) {
      md << "\n## " << t.title << "\n\n" << t.note << "\n\n|";
      for (const std::string& h : t.header) md << " " << h << " |";
      md << "\n|";
      for (size_t i = 0; i < t.header.size(); ++i) md << "---|";
      md << "\n";
      for (const auto& row : t.rows) {
        md << "|";
        for (const TableCell& c : row) {
          md << " "
             << (c.link.empty() ? Escape(c.text) : "[" + Escape(c.text) + "](<" + c.link + ">)")
             << " |";
        }
        md << "\n";
      }
    }
    return md.str();
  }
};

}  // namespace

std::unique_ptr<ReportRenderer> MakeMarkdownReport() { return std::make_unique<MarkdownReport>(); }

}  // namespace cuda_agent
