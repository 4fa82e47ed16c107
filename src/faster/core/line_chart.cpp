// Line chart implementation: linear axes with 5 ticks, a colour per series, a legend per panel.
#include "faster/core/line_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace faster {
namespace {

constexpr int kWidth = 640, kPanelHeight = 220, kLeft = 64, kRight = 150, kTop = 34, kGap = 40;
const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  void add(double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  void settle() {
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (hi - lo < 1e-12) lo -= 0.5, hi += 0.5;
  }
};

}  // namespace

std::string line_chart_svg(const std::string& title, const std::string& x_label,
                           const std::vector<ChartPanel>& panels) {
  Range x;
  for (const auto& p : panels)
    for (const auto& s : p.series)
      for (const auto& [px, py] : s.points) x.add(px);
  x.settle();
  const int plot_w = kWidth - kLeft - kRight;
  const int height = kTop + static_cast<int>(panels.size()) * (kPanelHeight + kGap) + 10;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
      << "<text x=\"8\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << escape(title)
      << "</text>\n";
  const auto sx = [&](double v) { return kLeft + (v - x.lo) / (x.hi - x.lo) * plot_w; };
  for (size_t pi = 0; pi < panels.size(); ++pi) {
    const auto& panel = panels[pi];
    const int top = kTop + static_cast<int>(pi) * (kPanelHeight + kGap);
    Range y;
    for (const auto& s : panel.series)
      for (const auto& [px, py] : s.points) y.add(py);
    y.settle();
    const auto sy = [&](double v) { return top + (y.hi - v) / (y.hi - y.lo) * kPanelHeight; };
    svg << "<rect x=\"" << kLeft << "\" y=\"" << top << "\" width=\"" << plot_w << "\" height=\""
        << kPanelHeight << "\" fill=\"none\" stroke=\"#999\"/>\n";
    for (int t = 0; t <= 4; ++t) {
      const double yv = y.lo + (y.hi - y.lo) * t / 4, xv = x.lo + (x.hi - x.lo) * t / 4;
      svg << "<text x=\"" << kLeft - 4 << "\" y=\"" << sy(yv) + 4 << "\" text-anchor=\"end\">"
          << number(yv) << "</text>\n"
          << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + plot_w << "\" y1=\"" << sy(yv)
          << "\" y2=\"" << sy(yv) << "\" stroke=\"#eee\"/>\n"
          << "<text x=\"" << sx(xv) << "\" y=\"" << top + kPanelHeight + 14
          << "\" text-anchor=\"middle\">" << number(xv) << "</text>\n";
    }
    svg << "<text x=\"12\" y=\"" << top + kPanelHeight / 2 << "\" transform=\"rotate(-90 12 "
        << top + kPanelHeight / 2 << ")\" text-anchor=\"middle\">" << escape(panel.y_label)
        << "</text>\n";
    for (size_t si = 0; si < panel.series.size(); ++si) {
      const auto& s = panel.series[si];
      const char* colour = kColours[si % (sizeof kColours / sizeof *kColours)];
      std::ostringstream path;
      for (const auto& [px, py] : s.points)
        if (std::isfinite(px) && std::isfinite(py)) path << sx(px) << "," << sy(py) << " ";
      svg << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" points=\""
          << path.str() << "\"/>\n";
      for (const auto& [px, py] : s.points)
        if (std::isfinite(px) && std::isfinite(py))
          svg << "<circle cx=\"" << sx(px) << "\" cy=\"" << sy(py) << "\" r=\"2.5\" fill=\""
              << colour << "\"/>\n";
      const int ly = top + 14 + 16 * static_cast<int>(si);
      svg << "<rect x=\"" << kLeft + plot_w + 10 << "\" y=\"" << ly - 9 << "\" width=\"12\" "
          << "height=\"3\" fill=\"" << colour << "\"/>\n"
          << "<text x=\"" << kLeft + plot_w + 26 << "\" y=\"" << ly - 4 << "\">" << escape(s.name)
          << "</text>\n";
    }
  }
  svg << "<text x=\"" << kLeft + plot_w / 2 << "\" y=\"" << height - 4
      << "\" text-anchor=\"middle\">" << escape(x_label) << "</text>\n</svg>\n";
  return svg.str();
}

}  // namespace faster
