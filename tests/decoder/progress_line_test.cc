// ProgressLine: when a progress line is shown, what it says, how often it redraws and that it
// clears itself; drawn as cupmon-decode draws it (StderrText). No terminal needed: the tty
// decision is an argument, the clock is fake.
#include "cupmon/decoder/progress_line.h"

#include <gtest/gtest.h>

#include <sstream>

#include "cupmon_decode/stderr_text.h"

namespace cupmon::decoder {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(ProgressLineTest, ShownOnlyOnATerminalAndForLargeInputs) {
  EXPECT_FALSE(ProgressLine::ShouldShow(/*wanted=*/false, 100 * kMiB));
  EXPECT_FALSE(ProgressLine::ShouldShow(false, 0));
  EXPECT_FALSE(ProgressLine::ShouldShow(true, 64 * kMiB - 1));
  EXPECT_TRUE(ProgressLine::ShouldShow(true, 64 * kMiB));
  EXPECT_TRUE(ProgressLine::ShouldShow(true, 1ull << 40));
}

TEST(ProgressLineTest, FormatsBytesReadOfTotalWithPercent) {
  EXPECT_EQ(ProgressLine::Format(0, 100 * kMiB), "read 0 B of 100.00 MiB (0%)");
  EXPECT_EQ(ProgressLine::Format(50 * kMiB, 100 * kMiB),
            "read 50.00 MiB of 100.00 MiB (50%)");
  EXPECT_EQ(ProgressLine::Format(5ull << 30, 20ull << 30),
            "read 5.00 GiB of 20.00 GiB (25%)");
  // Rounded down: 100% only when everything is read; more than the total reads as the total.
  EXPECT_EQ(ProgressLine::Format(100 * kMiB - 1, 100 * kMiB),
            "read 100.00 MiB of 100.00 MiB (99%)");
  EXPECT_EQ(ProgressLine::Format(200 * kMiB, 100 * kMiB),
            "read 100.00 MiB of 100.00 MiB (100%)");
  EXPECT_EQ(ProgressLine::Format(0, 0), "read 0 B of 0 B (100%)");
  // Percentages of totals near 2^64 do not overflow.
  EXPECT_EQ(ProgressLine::Format(UINT64_MAX / 2, UINT64_MAX).substr(0, 5), "read ");
  EXPECT_NE(ProgressLine::Format(UINT64_MAX / 2, UINT64_MAX).find("(49%)"), std::string::npos);
}

TEST(ProgressLineTest, RedrawsAtMostEveryIntervalAndClearsAtTheEnd) {
  int64_t now = 1'000'000'000;
  std::ostringstream err;
  decode_cli::StderrText text(err, /*wants_progress=*/true);
  {
    ProgressLine line(text, /*enabled=*/true, [&] { return now; });
    line.Update(1 * kMiB, 100 * kMiB);  // at once: nothing (short reads never show a line)
    EXPECT_EQ(err.str(), "");
    now += ProgressLine::kIntervalNs - 1;
    line.Update(2 * kMiB, 100 * kMiB);
    EXPECT_EQ(err.str(), "");
    now += 1;
    line.Update(30 * kMiB, 100 * kMiB);
    EXPECT_EQ(err.str(), "\rcupmon-decode: read 30.00 MiB of 100.00 MiB (30%)\033[K");
    EXPECT_TRUE(line.drawn());
    now += ProgressLine::kIntervalNs / 2;
    line.Update(40 * kMiB, 100 * kMiB);  // too soon after the last redraw
    EXPECT_EQ(err.str(), "\rcupmon-decode: read 30.00 MiB of 100.00 MiB (30%)\033[K");
    now += ProgressLine::kIntervalNs;
    line.Update(100 * kMiB, 100 * kMiB);
    EXPECT_EQ(err.str(),
              "\rcupmon-decode: read 30.00 MiB of 100.00 MiB (30%)\033[K"
              "\rcupmon-decode: read 100.00 MiB of 100.00 MiB (100%)\033[K");
    err.str("");
    line.Finish();
    EXPECT_EQ(err.str(), "\r\033[K");
    EXPECT_FALSE(line.drawn());
    line.Finish();  // idempotent
    EXPECT_EQ(err.str(), "\r\033[K");
  }
  EXPECT_EQ(err.str(), "\r\033[K");  // nothing drawn since: the destructor writes nothing
}

TEST(ProgressLineTest, DisabledWritesNothing) {
  int64_t now = 0;
  std::ostringstream err;
  decode_cli::StderrText text(err, /*wants_progress=*/true);
  {
    ProgressLine line(text, /*enabled=*/false, [&] { return now; });
    for (int i = 0; i < 10; ++i) {
      now += ProgressLine::kIntervalNs;
      line.Update(static_cast<uint64_t>(i) * kMiB, 10 * kMiB);
    }
    line.Finish();
  }
  EXPECT_EQ(err.str(), "");
}

TEST(ProgressLineTest, DestructorClearsADrawnLine) {
  int64_t now = 0;
  std::ostringstream err;
  decode_cli::StderrText text(err, /*wants_progress=*/true);
  {
    ProgressLine line(text, true, [&] { return now; });
    now += ProgressLine::kIntervalNs;
    line.Update(1, 2);
  }
  EXPECT_EQ(err.str(), "\rcupmon-decode: read 1 B of 2 B (50%)\033[K\r\033[K");
}

}  // namespace
}  // namespace cupmon::decoder
