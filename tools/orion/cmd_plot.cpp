// orion plot: training runs' metrics.jsonl drawn as loss curves in one SVG: the training loss
// (raw, light, and smoothed), the validation loss (dashed, with a marker per evaluation), one
// colour per run.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "svg_plot.h"
#include "train/metrics_log.h"

namespace orion::cli {

namespace {

struct PlotOpts {
  std::vector<std::string> files, labels;
  std::string out, title = "Training loss";
};

// A local linear fit (least squares over about 3% of the run on each side, at least one point)
// evaluated at each point: it follows the trend without the lag of an exponential average, and
// where the window is cut short at the ends it stays unbiased on a sloping curve, where a moving
// average would bend towards the inside. Non-finite values are left out and stay gaps.
std::vector<double> smooth(const std::vector<double>& x, const std::vector<double>& y) {
  const auto n = static_cast<std::ptrdiff_t>(y.size());
  const auto half = std::max<std::ptrdiff_t>(1, static_cast<std::ptrdiff_t>(std::lround(0.03 * static_cast<double>(n))));
  std::vector<double> out(y.size(), std::nan(""));
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    const auto at = static_cast<std::size_t>(i);
    if (!std::isfinite(y[at])) continue;
    double c = 0, sx = 0, sxx = 0, sy = 0, sxy = 0;
    for (std::ptrdiff_t j = std::max<std::ptrdiff_t>(0, i - half); j <= std::min(n - 1, i + half); ++j) {
      const auto k = static_cast<std::size_t>(j);
      if (!std::isfinite(y[k])) continue;
      const double dx = x[k] - x[at];
      c += 1;
      sx += dx;
      sxx += dx * dx;
      sy += y[k];
      sxy += dx * y[k];
    }
    const double det = c * sxx - sx * sx;
    out[at] = det > 1e-9 * std::max(1.0, c * sxx) ? (sxx * sy - sx * sxy) / det : sy / c;
  }
  return out;
}

std::string summary_duration(double s) {
  char buf[32];
  if (s < 120) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 7200) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  return buf;
}

// A run's name: --label, else the file's folder for a file called metrics.jsonl (runs live in
// their own --out folders), else the file's name without its extension.
std::string run_name(const std::string& file) {
  const std::filesystem::path p = std::filesystem::absolute(file);
  if (p.stem() == "metrics" && p.has_parent_path() && !p.parent_path().filename().empty())
    return p.parent_path().filename().string();
  return p.stem().string();
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

void plot(const PlotOpts& o) {
  if (!o.labels.empty() && o.labels.size() != o.files.size())
    throw Error("--label was given " + std::to_string(o.labels.size()) + " times for " + std::to_string(o.files.size()) +
                " metrics files (give one per file, in the same order)");
  const bool single = o.files.size() == 1;
  PlotSpec spec;
  spec.title = o.title;
  spec.x_label = "step";
  spec.y_label = "loss (nats per token)";
  std::vector<std::string> summaries;
  std::size_t points = 0;
  for (std::size_t r = 0; r < o.files.size(); ++r) {
    std::vector<train::MetricsRecord> records = train::read_metrics(o.files[r]);
    if (records.empty()) throw Error::in_file(o.files[r], "no metrics records to plot");
    std::stable_sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
    const std::string name = o.labels.empty() ? run_name(o.files[r]) : o.labels[r];
    const std::string& color = plot_palette()[r % plot_palette().size()];

    PlotSeries raw{.label = single ? "training loss" : "", .color = color, .line_width = 1.2, .opacity = 0.3};
    PlotSeries val{.label = single ? "validation loss" : name + ": validation",
                   .color = color,
                   .line_width = 1.8,
                   .dashed = true,
                   .marker_radius = 3.5};
    for (const train::MetricsRecord& m : records) {
      raw.x.push_back(static_cast<double>(m.step));
      raw.y.push_back(m.loss);
      if (m.val_loss) {
        val.x.push_back(static_cast<double>(m.step));
        val.y.push_back(*m.val_loss);
      }
    }
    if (val.x.size() > 60) val.marker_radius = 0;  // a dense line reads better than a crowd of circles
    PlotSeries smoothed{.label = single ? "training loss, smoothed" : name + ": training (smoothed)",
                        .x = raw.x,
                        .y = smooth(raw.x, raw.y),
                        .color = color,
                        .line_width = 2.4};
    // The picture's one line of figures: per run in the subtitle for one run, in the legend for several.
    double final_train = std::nan(""), final_val = val.y.empty() ? std::nan("") : val.y.back();
    for (auto it = smoothed.y.rbegin(); it != smoothed.y.rend() && !std::isfinite(final_train); ++it) final_train = *it;
    std::string summary = std::to_string(records.size()) + " steps (" + std::to_string(records.front().step) + " to " +
                          std::to_string(records.back().step) + ")";
    if (records.back().time_s) summary += " in " + summary_duration(*records.back().time_s);
    if (std::isfinite(final_train)) summary += ", final training loss " + number(final_train) + " (smoothed)";
    if (std::isfinite(final_val)) summary += ", validation " + number(final_val);
    if (!single) {
      if (std::isfinite(final_train)) smoothed.label += " " + number(final_train);
      if (std::isfinite(final_val)) val.label += " " + number(final_val);
    }
    summaries.push_back(summary);
    points += records.size();
    spec.series.push_back(std::move(raw));
    spec.series.push_back(std::move(smoothed));
    if (!val.x.empty()) spec.series.push_back(std::move(val));
  }
  spec.subtitle = single ? summaries.front() : std::to_string(o.files.size()) + " runs; final values in the legend";
  write_file_atomic(o.out, render_svg(spec));
  std::printf("wrote %s: %zu run%s, %zu points\n", o.out.c_str(), o.files.size(), single ? "" : "s", points);
}

}  // namespace

void add_plot_command(CLI::App& app) {
  auto o = std::make_shared<PlotOpts>();
  auto* cmd = app.add_subcommand("plot", "Draw the loss curves of training runs (metrics.jsonl files) as an SVG picture");
  cmd->add_option("metrics", o->files, "metrics.jsonl of each run; several are overlaid, one colour each")->required();
  cmd->add_option("-o,--out", o->out, "SVG file to write")->required();
  cmd->add_option("--title", o->title, "Title of the picture")->capture_default_str();
  cmd->add_option("--label", o->labels,
                  "Name of each run in the legend, once per file in order (default: the file's folder, or its name)");
  cmd->callback([o] { plot(*o); });
}

}  // namespace orion::cli
