// CSV text fields as every CSV output of the decoder writes them (the csv export, summary, steps
// and diff): RFC 4180, in double quotes with quotes doubled. Private to the decoder
// (decoder/src).
#pragma once

#include <string>
#include <string_view>

namespace cupmon::decoder {

// Appends `s` to `out` as a CSV field: in double quotes, each double quote doubled.
inline void AppendCsvField(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

// `s` as a CSV field (AppendCsvField).
inline std::string CsvQuote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  AppendCsvField(out, s);
  return out;
}

}  // namespace cupmon::decoder
