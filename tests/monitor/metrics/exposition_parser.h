// A strict parser for the Prometheus text exposition format 0.0.4, used by the metrics tests to
// check what cupmon serves line by line (stricter than Prometheus itself: no blank or stray lines).
#pragma once

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cupmon/base/error.h"  // std::expected, or its fallback under clang 14

namespace cupmon::metrics::testing {

struct ParsedSample {
  std::string name;
  std::map<std::string, std::string> labels;  // unescaped values
  std::string value_text;
  double value = 0;
};

struct ParsedFamily {
  std::string name;
  std::string help;  // unescaped
  std::string type;
  std::vector<ParsedSample> samples;
};

using Exposition = std::map<std::string, ParsedFamily>;

inline bool ValidMetricName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

inline bool ValidLabelName(std::string_view s) {
  return ValidMetricName(s) && s.find(':') == std::string_view::npos && !s.starts_with("__");
}

// Parses the whole text or says which line is wrong and why.
inline std::expected<Exposition, std::string> ParseExposition(std::string_view text) {
  Exposition out;
  std::set<std::string> series;
  std::string current;  // family whose samples are being read; families must be contiguous
  std::set<std::string> finished;
  if (text.empty() || text.back() != '\n') return std::unexpected("text must end with a newline");
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t eol = text.find('\n', pos);
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    const auto fail = [&](const std::string& why) {
      return std::unexpected("line " + std::to_string(line_no) + " '" + std::string(line) + "': " + why);
    };
    if (line.empty()) return fail("blank line");
    if (line.find('\r') != std::string_view::npos) return fail("carriage return");
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      const bool help = line[2] == 'H';
      const std::string_view rest = line.substr(7);
      const size_t sp = rest.find(' ');
      if (sp == std::string_view::npos) return fail("missing text after the name");
      const std::string name(rest.substr(0, sp));
      if (!ValidMetricName(name)) return fail("invalid metric name");
      if (finished.contains(name) && current != name) return fail("family appears twice");
      if (current != name) {
        if (!current.empty()) finished.insert(current);
        current = name;
      }
      ParsedFamily& family = out[name];
      family.name = name;
      if (!family.samples.empty()) return fail("HELP/TYPE after samples");
      const std::string_view value = rest.substr(sp + 1);
      if (help) {
        if (!family.help.empty()) return fail("second HELP");
        std::string unescaped;
        for (size_t i = 0; i < value.size(); ++i) {
          if (value[i] != '\\') {
            unescaped += value[i];
            continue;
          }
          if (++i == value.size()) return fail("dangling backslash in HELP");
          if (value[i] == '\\') unescaped += '\\';
          else if (value[i] == 'n') unescaped += '\n';
          else return fail("invalid escape in HELP");
        }
        if (unescaped.empty()) return fail("empty HELP");
        family.help = unescaped;
      } else {
        if (!family.type.empty()) return fail("second TYPE");
        static const std::set<std::string, std::less<>> kTypes = {"counter", "gauge", "histogram",
                                                                  "summary", "untyped"};
        if (!kTypes.contains(value)) return fail("unknown TYPE");
        family.type = std::string(value);
      }
      continue;
    }
    if (line.starts_with('#')) return fail("unexpected comment");

    ParsedSample sample;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    sample.name = std::string(line.substr(0, i));
    if (!ValidMetricName(sample.name)) return fail("invalid sample name");
    std::string canonical = sample.name + "{";
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (true) {
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        const size_t eq = line.find('=', i);
        if (eq == std::string_view::npos) return fail("label without '='");
        const std::string label(line.substr(i, eq - i));
        if (!ValidLabelName(label)) return fail("invalid label name '" + label + "'");
        if (eq + 1 >= line.size() || line[eq + 1] != '"') return fail("label value not quoted");
        i = eq + 2;
        std::string value;
        bool closed = false;
        while (i < line.size()) {
          const char c = line[i++];
          if (c == '"') {
            closed = true;
            break;
          }
          if (c != '\\') {
            value += c;
            continue;
          }
          if (i == line.size()) return fail("dangling backslash in label value");
          const char e = line[i++];
          if (e == '\\') value += '\\';
          else if (e == '"') value += '"';
          else if (e == 'n') value += '\n';
          else return fail("invalid escape in label value");
        }
        if (!closed) return fail("unterminated label value");
        if (!sample.labels.emplace(label, value).second) return fail("duplicate label " + label);
        if (i < line.size() && line[i] == ',') {
          ++i;
        } else if (i >= line.size() || line[i] != '}') {
          return fail("expected ',' or '}' after a label");
        }
      }
    }
    for (const auto& [k, v] : sample.labels) canonical += k + "=" + v + ",";
    if (i >= line.size() || line[i] != ' ') return fail("missing space before the value");
    const std::string_view rest = line.substr(i + 1);
    const size_t sp = rest.find(' ');
    sample.value_text = std::string(rest.substr(0, sp));  // an optional timestamp may follow
    if (sp != std::string_view::npos) {
      const std::string ts(rest.substr(sp + 1));
      char* end = nullptr;
      std::strtoll(ts.c_str(), &end, 10);
      if (ts.empty() || *end != '\0') return fail("invalid timestamp");
    }
    if (sample.value_text == "NaN" || sample.value_text == "+Inf" || sample.value_text == "-Inf") {
      sample.value = std::strtod(sample.value_text.c_str(), nullptr);
    } else {
      char* end = nullptr;
      sample.value = std::strtod(sample.value_text.c_str(), &end);
      if (sample.value_text.empty() || *end != '\0') return fail("invalid value");
    }
    // Counter and gauge samples carry the family's own name (no histogram/summary suffixes here).
    if (sample.name != current) return fail("sample outside its family's HELP/TYPE block");
    ParsedFamily& family = out[sample.name];
    if (family.type.empty()) return fail("sample before TYPE");
    if (!series.insert(canonical).second) return fail("duplicate series");
    family.samples.push_back(std::move(sample));
  }
  return out;
}

}  // namespace cupmon::metrics::testing
