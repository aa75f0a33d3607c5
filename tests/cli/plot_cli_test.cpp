// orion plot as a user runs it: metrics.jsonl files in, an SVG out, parsed here as XML (expat) to
// check its structure: the series drawn, the legend, the title, every point inside the picture.
#include <gtest/gtest.h>

#include <expat.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "cli/cli_folder_test.h"
#include "cli/run_cli.h"
#include "train/metrics_log.h"

namespace orion::test {
namespace {

// What the test looks at in an SVG document.
struct Svg {
  std::string root;
  std::map<std::string, std::string> root_attrs;
  std::map<std::string, int> counts;  // elements by name
  std::vector<std::string> texts;     // the content of each <text>
  std::vector<std::map<std::string, std::string>> paths;
  std::string title;
  std::string error;  // expat's, with the line, when the document is not well-formed
};

Svg parse_svg(const std::string& doc) {
  struct State {
    Svg svg;
    std::string chars;
    int depth = 0;
  } st;
  XML_Parser p = XML_ParserCreate("UTF-8");
  XML_SetUserData(p, &st);
  XML_SetElementHandler(
      p,
      [](void* data, const XML_Char* name, const XML_Char** attrs) {
        auto& s = *static_cast<State*>(data);
        std::map<std::string, std::string> a;
        for (int i = 0; attrs[i]; i += 2) a[attrs[i]] = attrs[i + 1];
        if (s.depth++ == 0) {
          s.svg.root = name;
          s.svg.root_attrs = a;
        }
        ++s.svg.counts[name];
        if (std::string(name) == "path") s.svg.paths.push_back(a);
        s.chars.clear();
      },
      [](void* data, const XML_Char* name) {
        auto& s = *static_cast<State*>(data);
        --s.depth;
        if (std::string(name) == "text") s.svg.texts.push_back(s.chars);
        if (std::string(name) == "title") s.svg.title = s.chars;
        s.chars.clear();
      });
  XML_SetCharacterDataHandler(p, [](void* data, const XML_Char* text, int len) {
    static_cast<State*>(data)->chars.append(text, static_cast<std::size_t>(len));
  });
  if (XML_Parse(p, doc.data(), static_cast<int>(doc.size()), 1) == XML_STATUS_ERROR)
    st.svg.error = "line " + std::to_string(XML_GetCurrentLineNumber(p)) + ": " + XML_ErrorString(XML_GetErrorCode(p));
  XML_ParserFree(p);
  return st.svg;
}

bool has_text(const Svg& s, const std::string& t) {
  return std::find(s.texts.begin(), s.texts.end(), t) != s.texts.end();
}
// A text that starts with `t` (legend entries of several runs end with the run's final value).
bool has_text_starting(const Svg& s, const std::string& t) {
  return std::any_of(s.texts.begin(), s.texts.end(), [&](const std::string& x) { return x.rfind(t, 0) == 0; });
}

class PlotCli : public CliFolderTest {
 protected:
  // A run whose loss falls from about 10 to 4 with noise, validated every `every` steps.
  std::string run(const std::string& name, int steps, int every, double shift) {
    std::filesystem::create_directories(dir_ / name);
    const std::string file = path(name + "/metrics.jsonl");
    train::MetricsLog log = train::MetricsLog::create(file);
    for (int s = 0; s < steps; ++s) {
      train::MetricsRecord r;
      r.step = s;
      r.loss = 4.0 + shift + 6.0 * std::exp(-s / 60.0) + 0.3 * std::sin(s * 1.7);
      r.lr = 3e-4;
      r.tokens_per_s = 1000;
      if (s % every == 0 || s == steps - 1) r.val_loss = 4.2 + shift + 6.0 * std::exp(-s / 60.0);
      log.append(r);
    }
    return file;
  }
};

TEST_F(PlotCli, DrawsTrainingAndValidationLossAsAWellFormedSvg) {
  const std::string m = run("cpu-f32", 300, 25, 0.0);
  const CliResult r = run_orion("plot " + m + " --out " + path("loss.svg") + " --title 'Loss <tiny & fast>'");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("1 run, 300 points"), std::string::npos) << r.out;
  const Svg s = parse_svg(read(path("loss.svg")));
  ASSERT_EQ(s.error, "");
  EXPECT_EQ(s.root, "svg");
  EXPECT_EQ(s.root_attrs.at("xmlns"), "http://www.w3.org/2000/svg");
  EXPECT_EQ(s.title, "Loss <tiny & fast>");
  EXPECT_TRUE(has_text(s, "Loss <tiny & fast>"));
  // Raw, smoothed and validation curves; a circle per validation point (13) and one in the legend.
  EXPECT_EQ(s.paths.size(), 3u);
  EXPECT_EQ(s.counts.at("circle"), 13 + 1);
  for (const char* t : {"training loss", "training loss, smoothed", "validation loss", "step", "loss (nats per token)"})
    EXPECT_TRUE(has_text(s, t)) << t;
  // The x axis ticks cover steps 0 to 299 with round numbers.
  EXPECT_TRUE(has_text(s, "0"));
  EXPECT_TRUE(has_text(s, "300"));
  // Every point of every curve lies inside the picture.
  const double w = std::stod(s.root_attrs.at("width")), h = std::stod(s.root_attrs.at("height"));
  for (const auto& p : s.paths) {
    std::istringstream d(p.at("d"));
    std::string cmd;
    double x, y;
    int n = 0;
    while (d >> cmd >> y) {
      x = std::stod(cmd.substr(1));
      EXPECT_TRUE(x >= 0 && x <= w && y >= 0 && y <= h) << x << " " << y;
      ++n;
    }
    EXPECT_GE(n, 13);
  }
}

TEST_F(PlotCli, OverlaysRunsInTheirOwnColoursWithTheirLabels) {
  const std::string a = run("a", 200, 50, 0.0), b = run("b", 150, 50, 0.5), c = run("ane-sim", 100, 50, 1.0);
  const CliResult r = run_orion("plot " + a + " " + b + " " + c + " --out " + path("all.svg") +
                                " --label 'cpu f32' --label 'cpu f16' --label ane-sim");
  ASSERT_EQ(r.status, 0) << r.out;
  const Svg s = parse_svg(read(path("all.svg")));
  ASSERT_EQ(s.error, "");
  EXPECT_EQ(s.paths.size(), 9u);
  std::set<std::string> colours;
  for (const auto& p : s.paths) colours.insert(p.at("stroke"));
  EXPECT_EQ(colours.size(), 3u);
  for (const char* t : {"cpu f32: training (smoothed) ", "cpu f16: validation ", "ane-sim: validation "})
    EXPECT_TRUE(has_text_starting(s, t)) << t;
  // Without --label a run is named after its folder.
  ASSERT_EQ(run_orion("plot " + a + " " + c + " --out " + path("two.svg")).status, 0);
  const Svg two = parse_svg(read(path("two.svg")));
  EXPECT_TRUE(has_text_starting(two, "a: training (smoothed) "));
  EXPECT_TRUE(has_text_starting(two, "ane-sim: validation "));
}

TEST_F(PlotCli, ABadMetricsLineIsReportedWithItsLineNumber) {
  const std::string good = R"({"step": 0, "loss": 9, "lr": 0.1, "tokens_per_s": 5})";
  const std::string m = write("m.jsonl", good + "\n" + good + "\n{\"step\": 2, \"loss\": \n");
  const CliResult r = run_orion("plot " + m + " --out " + path("x.svg"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("m.jsonl:3:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line: " << r.out;
  EXPECT_FALSE(std::filesystem::exists(path("x.svg")));
  const CliResult missing = run_orion("plot " + write("n.jsonl", "{\"step\": 0}\n") + " --out " + path("x.svg"));
  EXPECT_NE(missing.out.find("n.jsonl:1:1: metrics record: missing \"loss\""), std::string::npos) << missing.out;
  const CliResult empty = run_orion("plot " + write("e.jsonl", "") + " --out " + path("x.svg"));
  EXPECT_NE(empty.out.find("e.jsonl: no metrics records to plot"), std::string::npos) << empty.out;
  const CliResult labels = run_orion("plot " + m + " " + m + " --label one --out " + path("x.svg"));
  EXPECT_NE(labels.out.find("--label was given 1 times for 2 metrics files"), std::string::npos) << labels.out;
}

}  // namespace
}  // namespace orion::test
