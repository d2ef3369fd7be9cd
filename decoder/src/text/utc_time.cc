// Wall-clock times as text (utc_time.h).
#include "text/utc_time.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>

namespace cupmon::decoder {

std::string UtcTime(int64_t unix_ns, int digits) {
  const time_t secs = static_cast<time_t>(unix_ns / 1'000'000'000);
  int64_t frac = unix_ns % 1'000'000'000;
  if (frac < 0) frac += 1'000'000'000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char date[40], text[64];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  for (int d = digits; d < 9; ++d) frac /= 10;
  std::snprintf(text, sizeof text, "%s.%0*" PRId64 "Z", date, digits, frac);
  return text;
}

}  // namespace cupmon::decoder
