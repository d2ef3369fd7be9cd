// Tests for WindowIndex (decoder/src/window_index.cc): windows and gaps from markers, and which
// window holds a time, with the remembered answers dropped when a marker changes the windows.
#include "window_index.h"

#include <gtest/gtest.h>

#include "cupmon/decoder/window_span.h"

namespace cupmon::decoder {
namespace {

pb::WindowMarker Marker(uint32_t id, pb::WindowMarker::Edge edge, uint64_t ns,
                        const std::string& note = "") {
  pb::WindowMarker m;
  m.set_window_id(id);
  m.set_edge(edge);
  m.set_cupti_ns(ns);
  m.set_note(note);
  return m;
}

TEST(WindowIndexTest, FindsTheWindowHoldingATime) {
  WindowIndex index;
  EXPECT_TRUE(index.empty());
  EXPECT_EQ(index.At(100), nullptr);
  index.OnMarker(Marker(1, pb::WindowMarker::BEGIN, 100));
  index.OnMarker(Marker(1, pb::WindowMarker::END, 200, "duration"));
  index.OnMarker(Marker(2, pb::WindowMarker::BEGIN, 500));  // still open: holds all after 500
  EXPECT_FALSE(index.empty());
  EXPECT_EQ(index.At(99), nullptr);
  ASSERT_NE(index.At(100), nullptr);
  EXPECT_EQ(index.At(100)->id, 1u);
  EXPECT_EQ(index.At(200)->id, 1u) << "the end is inside";
  EXPECT_EQ(index.At(201), nullptr);
  EXPECT_EQ(index.At(499), nullptr);
  ASSERT_NE(index.At(1'000'000), nullptr);
  EXPECT_EQ(index.At(1'000'000)->id, 2u);
  EXPECT_EQ(index.At(150)->id, 1u) << "an earlier time after a later answer";
  EXPECT_EQ(index.windows().at(1).note, "duration");
}

// A time between two windows is remembered as a gap; a window that opens inside the gap later
// must still be found.
TEST(WindowIndexTest, AWindowAddedInsideARememberedGapIsFound) {
  WindowIndex index;
  index.OnMarker(Marker(1, pb::WindowMarker::BEGIN, 100));
  index.OnMarker(Marker(1, pb::WindowMarker::END, 200));
  EXPECT_EQ(index.At(300), nullptr);  // remembered: (200, inf)
  EXPECT_EQ(index.At(400), nullptr);
  index.OnMarker(Marker(2, pb::WindowMarker::BEGIN, 350));
  ASSERT_NE(index.At(400), nullptr);
  EXPECT_EQ(index.At(400)->id, 2u);
  // The last answer is a window whose end arrives later: it no longer holds times past it.
  index.OnMarker(Marker(2, pb::WindowMarker::END, 450));
  EXPECT_EQ(index.At(460), nullptr);
  EXPECT_EQ(index.At(450)->id, 2u);
}

TEST(WindowIndexTest, GapsAreKeptApartFromWindowsWithBothNotes) {
  WindowIndex index;
  // The END may be read first (files read out of order): the notes still read begin / end.
  index.OnMarker(Marker(3, pb::WindowMarker::GAP_END, 900, "released"));
  index.OnMarker(Marker(3, pb::WindowMarker::GAP_BEGIN, 800, "taken by nsys"));
  EXPECT_TRUE(index.empty()) << "a gap is not a window";
  EXPECT_EQ(index.At(850), nullptr);
  ASSERT_EQ(index.gaps().count(3), 1u);
  const WindowSpan& g = index.gaps().at(3);
  EXPECT_EQ(g.begin, 800u);
  EXPECT_EQ(g.end, 900u);
  EXPECT_EQ(g.note, "taken by nsys / released");
}

// The BEGIN marker of an automatic window says which quantity was slow: the step time, or under
// CUPMON_AUTO_WINDOW_BY the rank's own time, work or host gap; the "why" names it.
TEST(WindowIndexTest, AnAutomaticWindowSaysWhichQuantityWasSlow) {
  WindowIndex index;
  for (const auto& [id, by] : {std::pair<uint32_t, const char*>{1, ""}, {2, "own"}, {3, "work"},
                               {4, "host-gap"}}) {
    pb::WindowMarker m = Marker(id, pb::WindowMarker::BEGIN, 100 * id);
    m.set_source(pb::TRIGGER_AUTO);
    m.set_trigger_step(102);
    m.set_trigger_step_ns(61'993'000);
    m.set_trigger_median_ns(3'635'000);
    m.set_trigger_factor(3);
    m.set_trigger_by(by);
    index.OnMarker(m);
  }
  EXPECT_EQ(AutoTriggerText(index.windows().at(1)),
            "step 102 took 61.993ms, 17.05x the median 3.6350ms (threshold 3x)");
  EXPECT_EQ(AutoTriggerText(index.windows().at(2)),
            "step 102: own time (work + host gap) 61.993ms, 17.05x the median 3.6350ms "
            "(threshold 3x)");
  EXPECT_EQ(AutoTriggerText(index.windows().at(3)),
            "step 102: work 61.993ms, 17.05x the median 3.6350ms (threshold 3x)");
  EXPECT_EQ(AutoTriggerText(index.windows().at(4)),
            "step 102: host gap 61.993ms, 17.05x the median 3.6350ms (threshold 3x)");
}

}  // namespace
}  // namespace cupmon::decoder
