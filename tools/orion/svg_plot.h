#pragma once
// A small line-chart writer for SVG: series of (x, y) points as lines and/or markers, axes with
// "nice" ticks (1, 2 or 5 times a power of ten), a light grid, axis labels, a title and subtitle,
// and a legend. What `orion plot` draws loss curves with; no dependency beyond the standard
// library, and the output is plain SVG 1.1 that browsers and rsvg-convert render alike.
#include <string>
#include <vector>

namespace orion::cli {

struct PlotSeries {
  std::string label = {};  // legend text; empty: not in the legend
  std::vector<double> x = {}, y = {};  // equal lengths; points with a non-finite coordinate are gaps
  std::string color = "#1f77b4";
  double line_width = 2.0;  // 0: no line
  double opacity = 1.0;
  bool dashed = false;
  double marker_radius = 0.0;  // > 0: a circle at each point
};

struct PlotSpec {
  std::string title, subtitle, x_label, y_label;
  std::vector<PlotSeries> series;  // drawn in order: later ones on top
  int width = 960, height = 560;
};

// The chart as an SVG document. Axis ranges cover every finite point of every series, widened
// to whole ticks. Text is XML-escaped.
std::string render_svg(const PlotSpec& spec);

// Ticks covering [lo, hi]: about `target` values k * step, step 1, 2 or 5 times a power of ten,
// the first <= lo and the last >= hi. Public for tests and for callers that pick ranges.
struct Ticks {
  double first = 0, step = 1;
  int count = 0;
  int decimals = 0;  // enough to tell neighbouring ticks apart
};
Ticks nice_ticks(double lo, double hi, int target);

// The palette series take their colours from, in order (Tableau 10: distinct in print and for
// the common forms of colour blindness, in its first few entries).
const std::vector<std::string>& plot_palette();

}  // namespace orion::cli
