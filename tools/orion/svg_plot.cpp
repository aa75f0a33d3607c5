#include "svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace orion::cli {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fmt(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  return s == "-0" ? "0" : s;
}

// Coordinates with two decimals: enough for any screen, and a compact file.
std::string px(double v) { return fmt(v, 2); }

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

constexpr const char* kFont = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"";

}  // namespace

const std::vector<std::string>& plot_palette() {
  static const std::vector<std::string> p = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                             "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return p;
}

Ticks nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) {  // one value (or none): a unit-wide range around it
    const double c = std::isfinite(lo) ? lo : 0.0;
    const double half = std::max(std::abs(c) * 0.05, 0.5);
    lo = c - half;
    hi = c + half;
  }
  const double raw = (hi - lo) / std::max(target - 1, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  Ticks t;
  t.step = step;
  t.first = std::floor(lo / step) * step;
  const double last = std::ceil(hi / step) * step;
  t.count = static_cast<int>(std::llround((last - t.first) / step)) + 1;
  t.decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  return t;
}

std::string render_svg(const PlotSpec& spec) {
  const double W = spec.width, H = spec.height;
  const bool has_subtitle = !spec.subtitle.empty();
  const double left = 72, right = 24, top = has_subtitle ? 74 : 54, bottom = 58;
  const double pw = W - left - right, ph = H - top - bottom;

  Range xr, yr;
  for (const PlotSeries& s : spec.series)
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) {
        xr.add(s.x[i]);
        yr.add(s.y[i]);
      }
  if (xr.empty()) xr = {0, 1};
  if (yr.empty()) yr = {0, 1};
  const Ticks xt = nice_ticks(xr.lo, xr.hi, 8), yt = nice_ticks(yr.lo, yr.hi, 7);
  const double x0 = xt.first, x1 = xt.first + xt.step * (xt.count - 1);
  const double y0 = yt.first, y1 = yt.first + yt.step * (yt.count - 1);
  auto sx = [&](double x) { return left + (x - x0) / (x1 - x0) * pw; };
  auto sy = [&](double y) { return top + ph - (y - y0) / (y1 - y0) * ph; };

  std::string o;
  o += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + px(W) + "\" height=\"" + px(H) +
       "\" viewBox=\"0 0 " + px(W) + " " + px(H) + "\">\n";
  o += "<title>" + escape(spec.title) + "</title>\n";
  o += "<rect x=\"0\" y=\"0\" width=\"" + px(W) + "\" height=\"" + px(H) + "\" fill=\"#ffffff\"/>\n";
  o += "<text x=\"" + px(left) + "\" y=\"30\" " + kFont + " font-size=\"19\" font-weight=\"bold\" fill=\"#222222\">" +
       escape(spec.title) + "</text>\n";
  if (has_subtitle)
    o += "<text x=\"" + px(left) + "\" y=\"52\" " + kFont + " font-size=\"13\" fill=\"#666666\">" +
         escape(spec.subtitle) + "</text>\n";

  // Grid and tick labels.
  o += "<g stroke=\"#e6e6e6\" stroke-width=\"1\">\n";
  for (int i = 0; i < xt.count; ++i) {
    const double x = sx(xt.first + i * xt.step);
    o += "<line x1=\"" + px(x) + "\" y1=\"" + px(top) + "\" x2=\"" + px(x) + "\" y2=\"" + px(top + ph) + "\"/>\n";
  }
  for (int i = 0; i < yt.count; ++i) {
    const double y = sy(yt.first + i * yt.step);
    o += "<line x1=\"" + px(left) + "\" y1=\"" + px(y) + "\" x2=\"" + px(left + pw) + "\" y2=\"" + px(y) + "\"/>\n";
  }
  o += "</g>\n";
  o += std::string("<g ") + kFont + " font-size=\"12\" fill=\"#444444\">\n";
  for (int i = 0; i < xt.count; ++i)
    o += "<text x=\"" + px(sx(xt.first + i * xt.step)) + "\" y=\"" + px(top + ph + 18) + "\" text-anchor=\"middle\">" +
         fmt(xt.first + i * xt.step, xt.decimals) + "</text>\n";
  for (int i = 0; i < yt.count; ++i)
    o += "<text x=\"" + px(left - 8) + "\" y=\"" + px(sy(yt.first + i * yt.step) + 4) + "\" text-anchor=\"end\">" +
         fmt(yt.first + i * yt.step, yt.decimals) + "</text>\n";
  o += "</g>\n";
  // Axes and their labels.
  o += "<rect x=\"" + px(left) + "\" y=\"" + px(top) + "\" width=\"" + px(pw) + "\" height=\"" + px(ph) +
       "\" fill=\"none\" stroke=\"#888888\" stroke-width=\"1\"/>\n";
  o += "<text x=\"" + px(left + pw / 2) + "\" y=\"" + px(H - 16) + "\" " + kFont +
       " font-size=\"14\" fill=\"#333333\" text-anchor=\"middle\">" + escape(spec.x_label) + "</text>\n";
  o += "<text x=\"20\" y=\"" + px(top + ph / 2) + "\" " + kFont +
       " font-size=\"14\" fill=\"#333333\" text-anchor=\"middle\" transform=\"rotate(-90 20 " + px(top + ph / 2) +
       ")\">" + escape(spec.y_label) + "</text>\n";

  // The series, clipped to the plot area.
  o += "<defs><clipPath id=\"plot-area\"><rect x=\"" + px(left) + "\" y=\"" + px(top) + "\" width=\"" + px(pw) +
       "\" height=\"" + px(ph) + "\"/></clipPath></defs>\n";
  o += "<g clip-path=\"url(#plot-area)\">\n";
  for (const PlotSeries& s : spec.series) {
    const std::size_t n = std::min(s.x.size(), s.y.size());
    if (s.line_width > 0) {
      // One path; a gap (a non-finite point) starts a new subpath.
      std::string d;
      bool pen_down = false;
      for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
          pen_down = false;
          continue;
        }
        d += (pen_down ? "L" : "M") + px(sx(s.x[i])) + " " + px(sy(s.y[i])) + " ";
        pen_down = true;
      }
      if (!d.empty()) {
        d.pop_back();
        o += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"" + px(s.line_width) +
             "\" stroke-opacity=\"" + px(s.opacity) + "\" stroke-linejoin=\"round\" stroke-linecap=\"round\"" +
             (s.dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
      }
    }
    if (s.marker_radius > 0) {
      o += "<g fill=\"#ffffff\" stroke=\"" + s.color + "\" stroke-width=\"1.6\" fill-opacity=\"" + px(s.opacity) + "\">\n";
      for (std::size_t i = 0; i < n; ++i)
        if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]))
          o += "<circle cx=\"" + px(sx(s.x[i])) + "\" cy=\"" + px(sy(s.y[i])) + "\" r=\"" + px(s.marker_radius) + "\"/>\n";
      o += "</g>\n";
    }
  }
  o += "</g>\n";

  // The legend: top right inside the plot area, on a white card so curves do not show through.
  std::vector<const PlotSeries*> entries;
  for (const PlotSeries& s : spec.series)
    if (!s.label.empty()) entries.push_back(&s);
  if (!entries.empty()) {
    std::size_t longest = 0;
    for (const PlotSeries* s : entries) longest = std::max(longest, s->label.size());
    const double row = 20, lw = 44 + 7.0 * static_cast<double>(longest), lh = row * static_cast<double>(entries.size()) + 12;
    const double lx = left + pw - lw - 12, ly = top + 12;
    o += "<g " + std::string(kFont) + " font-size=\"12.5\" fill=\"#333333\">\n";
    o += "<rect x=\"" + px(lx) + "\" y=\"" + px(ly) + "\" width=\"" + px(lw) + "\" height=\"" + px(lh) +
         "\" rx=\"4\" fill=\"#ffffff\" fill-opacity=\"0.92\" stroke=\"#cccccc\"/>\n";
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const PlotSeries& s = *entries[i];
      const double y = ly + 16 + row * static_cast<double>(i);
      if (s.line_width > 0)
        o += "<line x1=\"" + px(lx + 10) + "\" y1=\"" + px(y) + "\" x2=\"" + px(lx + 34) + "\" y2=\"" + px(y) +
             "\" stroke=\"" + s.color + "\" stroke-width=\"" + px(std::max(s.line_width, 1.5)) + "\" stroke-opacity=\"" +
             px(std::max(s.opacity, 0.35)) + "\"" + (s.dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
      if (s.marker_radius > 0)
        o += "<circle cx=\"" + px(lx + 22) + "\" cy=\"" + px(y) + "\" r=\"" + px(s.marker_radius) +
             "\" fill=\"#ffffff\" stroke=\"" + s.color + "\" stroke-width=\"1.6\"/>\n";
      o += "<text x=\"" + px(lx + 42) + "\" y=\"" + px(y + 4) + "\">" + escape(s.label) + "</text>\n";
    }
    o += "</g>\n";
  }
  o += "</svg>\n";
  return o;
}

}  // namespace orion::cli
