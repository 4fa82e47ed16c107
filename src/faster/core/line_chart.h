// Line charts as SVG: a few named series of (x, y) points on one or more panels stacked
// vertically, each with its own y axis.  For training curves (loss and accuracy per epoch) and
// accuracy against wall clock.  No dependencies: the SVG is written by hand.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace faster {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), in x order
};

struct ChartPanel {
  std::string y_label;
  std::vector<ChartSeries> series;
};

// An SVG document: `title` on top, the panels one under the other sharing the x axis `x_label`.
std::string line_chart_svg(const std::string& title, const std::string& x_label,
                           const std::vector<ChartPanel>& panels);

}  // namespace faster
