// Report writers for `faster bench`: the Markdown table (the seed's layout), JSON, and an SVG
// chart.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "faster/bench/matrix.h"

namespace faster::bench {
namespace {

std::string cell_text(const CellResult* c) {
  if (!c) return "n/a";
  if (!c->ok()) return "failed";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f s (%.1f %%)", c->median_seconds(), c->median_accuracy());
  return buf;
}

const CellResult* find(const Report& r, const std::string& row, const std::string& column) {
  for (const auto& c : r.cells)
    if (c.cell.row == row && c.cell.column == column) return &c;
  return nullptr;
}

std::string device_name(const Report& r) {
  if (!r.options.gpu)
    return "CPU (" + r.env.value("/cpu/model"_json_pointer, std::string("?")) + ")";
  const auto& gpus = r.env["cuda"]["gpus"];
  return gpus.empty() ? "GPU" : gpus[0].value("name", std::string("GPU"));
}

}  // namespace

std::string markdown(const Report& r) {
  const auto& o = r.options;
  std::ostringstream md;
  if (r.cells.empty() && r.tta) {  // the time-to-accuracy row alone: no matrix ran
    md << "faster bench: time to accuracy on " << device_name(r) << "\n";
    return md.str() + tta_markdown(*r.tta);
  }
  md << "faster bench: ThinNet (blocks " << o.blocks << ", filters " << o.filters << "), batch "
     << o.batch << ", recipe " << o.recipe << ", " << o.epochs << " epoch(s), on " << device_name(r)
     << "; seconds (final test accuracy), median of " << o.repeats << " run(s)\n";
  if (!o.gpu)
    md << "No GPU: the short CPU version ("
       << (o.train_limit ? "at most " + std::to_string(o.train_limit) : std::string("all"))
       << " train images); cuDNN columns do not apply, AMP is bf16 autocast.\n";
  if (r.cells.empty()) return r.tta ? md.str() + tta_markdown(*r.tta) : md.str();
  const auto* base = find(r, "single, host loader", "plain");
  md << "\nbaseline (single " << (o.gpu ? "GPU" : "CPU")
     << ", host loader, fp32): " << cell_text(base) << "\n\n| mode [GPUs] |";
  for (const auto& c : kColumns) md << " " << c << " |";
  md << "\n|---|";
  for (size_t i = 0; i < kColumns.size(); ++i) md << "---|";
  md << "\n";
  std::vector<std::string> rows;
  for (const auto& c : r.cells)
    if (c.cell.row != "fast" && std::find(rows.begin(), rows.end(), c.cell.row) == rows.end())
      rows.push_back(c.cell.row);
  for (const auto& row : rows) {
    const auto* any = find(r, row, "plain");
    md << "| " << row << " [" << (any ? any->cell.gpus : 1) << "] |";
    for (const auto& col : kColumns) md << " " << cell_text(find(r, row, col)) << " |";
    md << "\n";
  }
  if (const auto* fast = find(r, "fast", "fast")) {
    md << "\nfastest mode (--fast) [" << fast->cell.gpus << "]: " << cell_text(fast);
    if (fast->ok() && base && base->ok()) {
      char buf[64];
      std::snprintf(buf, sizeof buf, ", %.1fx the baseline",
                    base->median_seconds() / fast->median_seconds());
      md << buf;
    }
    md << "\n";
  }
  if (r.tta) md << tta_markdown(*r.tta);
  return md.str();
}

nlohmann::json to_json(const Report& r) {
  nlohmann::json j;
  const auto& o = r.options;
  j["options"] = {{"epochs", o.epochs},
                  {"recipe", o.recipe},
                  {"batch", o.batch},
                  {"blocks", o.blocks},
                  {"filters", o.filters},
                  {"repeats", o.repeats},
                  {"gpu", o.gpu},
                  {"cpu_requested", o.cpu_requested},
                  {"data", o.data},
                  {"train_limit", o.train_limit},
                  {"test_limit", o.test_limit},
                  {"rows", o.rows},
                  {"train_args", o.extra_args},
                  {"tta_args", o.tta_args},
                  {"tta_target", o.tta_target},
                  {"tta_seeds", o.tta_seeds},
                  {"tta_peer", o.tta_peer}};
  j["env"] = r.env;
  j["cells"] = nlohmann::json::array();
  for (const auto& c : r.cells) {
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& run : c.runs)
      runs.push_back({{"ok", run.ok},
                      {"seconds", run.seconds},
                      {"test_accuracy", run.accuracy},
                      {"error", run.error}});
    j["cells"].push_back({{"row", c.cell.row},
                          {"column", c.cell.column},
                          {"gpus", c.cell.gpus},
                          {"args", c.cell.args},
                          {"ok", c.ok()},
                          {"median_seconds", c.median_seconds()},
                          {"median_test_accuracy", c.median_accuracy()},
                          {"runs", runs}});
  }
  if (r.tta) j["time_to_accuracy"] = tta_json(*r.tta);
  return j;
}

namespace {
std::string bar_chart_svg(const Report& r) {
  // Horizontal bars, one per successful cell, longest time = full width.
  constexpr int kLabelWidth = 330, kBarWidth = 420, kRow = 22, kTop = 30;
  double longest = 0;
  for (const auto& c : r.cells)
    if (c.ok()) longest = std::max(longest, c.median_seconds());
  std::ostringstream svg;
  const int height = kTop + kRow * static_cast<int>(r.cells.size()) + 10;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kLabelWidth + kBarWidth + 90
      << "\" height=\"" << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<text x=\"4\" y=\"18\" font-weight=\"bold\">faster bench: seconds for "
      << r.options.epochs << " epoch(s), median of " << r.options.repeats
      << " (shorter is faster)</text>\n";
  int y = kTop;
  for (const auto& c : r.cells) {
    const std::string label = c.cell.row + " / " + c.cell.column;
    svg << "<text x=\"4\" y=\"" << y + 14 << "\">" << label << "</text>\n";
    if (c.ok() && longest > 0) {
      const int w = std::max(1, static_cast<int>(kBarWidth * c.median_seconds() / longest));
      const char* colour = c.cell.row == "fast" ? "#d62728" : "#1f77b4";
      char num[32];
      std::snprintf(num, sizeof num, "%.2f s", c.median_seconds());
      svg << "<rect x=\"" << kLabelWidth << "\" y=\"" << y + 3 << "\" width=\"" << w
          << "\" height=\"" << kRow - 6 << "\" fill=\"" << colour << "\"/>\n"
          << "<text x=\"" << kLabelWidth + w + 4 << "\" y=\"" << y + 14 << "\">" << num
          << "</text>\n";
    } else {
      svg << "<text x=\"" << kLabelWidth << "\" y=\"" << y + 14 << "\" fill=\"#999\">"
          << (c.ok() ? "" : "failed") << "</text>\n";
    }
    y += kRow;
  }
  svg << "</svg>\n";
  return svg.str();
}

// The number in `attr="..."` of an SVG document's root element.
int svg_attribute(const std::string& svg, const std::string& attr) {
  const auto p = svg.find(" " + attr + "=\"");
  return p == std::string::npos ? 0 : std::atoi(svg.c_str() + p + attr.size() + 3);
}
}  // namespace

std::string svg_chart(const Report& r) {
  if (!r.tta) return bar_chart_svg(r);
  // The bars on top (when the matrix ran), the time-to-accuracy chart under them, as nested SVGs.
  const std::string bars = r.cells.empty() ? "" : bar_chart_svg(r), tta = tta_chart_svg(*r.tta);
  const int top = svg_attribute(bars, "height");
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""
      << std::max(svg_attribute(bars, "width"), svg_attribute(tta, "width")) << "\" height=\""
      << top + svg_attribute(tta, "height") << "\">\n"
      << bars << "<svg y=\"" << top << "\"" << tta.substr(std::string("<svg").size()) << "</svg>\n";
  return svg.str();
}

}  // namespace faster::bench
