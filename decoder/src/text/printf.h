// printf into a std::string: the formatted texts of the reports and of the commands' shared
// duration text (reports.h, FormatDuration). Private to the decoder (decoder/src).
#pragma once

#include <string>

namespace cupmon::decoder {

// printf into a std::string, of any length.
std::string Printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace cupmon::decoder
