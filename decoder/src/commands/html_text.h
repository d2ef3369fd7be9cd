// Text helpers of the HTML report's parts (html_report.cc, html_job_section.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cupmon/decoder/reports.h"
#include "report_text.h"

namespace cupmon::decoder {

// `s` escaped for HTML text and attribute values.
inline std::string Esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// A duration as the report prints it.
inline std::string Dur(uint64_t ns) { return FormatDuration(static_cast<double>(ns)); }

}  // namespace cupmon::decoder
