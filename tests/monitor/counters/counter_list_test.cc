// Tests the counter list (monitor/counters/include/cupmon/counters/counter_list.h): that the
// Stats and MetricsView messages carry exactly its rows, under its field numbers, that the
// metrics generated from it serve every PROM row with its name, help and value, and that
// docs/DEPLOY.md names every served counter. Its C placement is checked where the C API fills
// the structs (monitor/src/entry_points.cc, at compile time) and in
// python/tests/test_counter_list.py.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/counters/counter_list.h"
#include "cupmon/metrics/metrics_server.h"
#include "exposition_parser.h"

namespace cupmon {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

struct Row {
  std::string name;
  int field;
  std::string source;
  std::string c_struct;
  size_t c_offset;
  bool prom;
  std::string prom_name;
  std::string help;
};

const std::vector<Row>& Rows() {
#define CUPMON_ROW(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  {#name, field, #source, #c_struct, c_offset, std::string_view(#prom) == "PROM", prom_name, help},
  static const std::vector<Row> rows = {CUPMON_COUNTERS(CUPMON_ROW)};
#undef CUPMON_ROW
  return rows;
}

constexpr const char* kList = "the counter list (monitor/counters/include/cupmon/counters/counter_list.h)";

// Fields of the messages that are not counters, so not rows.
const std::set<std::string> kStatsNotCounters = {"realtime_ns", "lost_records_by_kind"};
const std::set<std::string> kViewNotCounters = {"device_busy",       "stream_busy", "gpu_uuids",
                                                "last_write_failed", "files",       "disk_bytes",
                                                "steps",             "cupti_delivery_lag_ns"};

TEST(CounterListTest, RowsAreInStatsFieldOrderWithUniqueNamesAndAValidColumnEach) {
  ASSERT_GE(Rows().size(), 40u);
  std::set<std::string> names;
  std::set<std::string> prom_names;
  int last = 0;
  for (const Row& r : Rows()) {
    SCOPED_TRACE(r.name);
    EXPECT_TRUE(names.insert(r.name).second) << r.name << " is twice in " << kList;
    EXPECT_GT(r.field, last) << r.name << " (Stats field " << r.field
                                   << ") is out of Stats field order in " << kList;
    last = r.field;
    EXPECT_FALSE(r.help.empty()) << r.name << " has no help text";
    EXPECT_TRUE(r.source == "WRITER" || r.source == "ATOMIC" || r.source == "PART") << r.source;
    if (r.c_struct == "NO_C") {
      EXPECT_EQ(r.c_offset, 0u) << r.name << " is NO_C: its c_offset is 0";
    } else {
      EXPECT_TRUE(r.c_struct == "BASE" || r.c_struct == "SIZED") << r.c_struct;
    }
    if (r.prom) {
      EXPECT_TRUE(r.prom_name.starts_with("cupmon_") && r.prom_name.ends_with("_total"))
          << r.name << ": a served counter is named cupmon_*_total, not " << r.prom_name;
      EXPECT_TRUE(prom_names.insert(r.prom_name).second) << r.prom_name << " is served twice";
    } else {
      EXPECT_EQ(r.prom_name, "") << r.name << " is NO_PROM but has a Prometheus name";
    }
  }
}

// A row's field in `message`, or why not.
std::string CheckField(const Descriptor* message, const Row& r, bool check_number) {
  const FieldDescriptor* f = message->FindFieldByName(r.name);
  if (!f)
    return "counter " + r.name + " of " + kList + " is not in message " + message->name() +
           " (proto/cupmon.proto)";
  if (f->cpp_type() != FieldDescriptor::CPPTYPE_UINT64 || f->is_repeated())
    return message->name() + "." + r.name + " is not a plain uint64";
  if (check_number && f->number() != r.field)
    return message->name() + "." + r.name + " is field " + std::to_string(f->number()) + ", " +
           kList + " says " + std::to_string(r.field);
  return "";
}

TEST(CounterListTest, StatsCarriesEveryRowUnderItsFieldNumberAndNoOtherCounter) {
  const Descriptor* stats = pb::Stats::descriptor();
  std::set<std::string> rows;
  for (const Row& r : Rows()) {
    rows.insert(r.name);
    EXPECT_EQ(CheckField(stats, r, /*check_number=*/true), "");
  }
  for (int i = 0; i < stats->field_count(); ++i) {
    const FieldDescriptor* f = stats->field(i);
    if (kStatsNotCounters.contains(f->name())) continue;
    EXPECT_TRUE(rows.contains(f->name()))
        << "Stats." << f->name() << " (field " << f->number() << ") is not in " << kList;
  }
}

TEST(CounterListTest, MetricsViewCarriesExactlyThePromRows) {
  const Descriptor* view = pb::MetricsView::descriptor();
  std::set<std::string> prom;
  for (const Row& r : Rows()) {
    if (r.prom) {
      prom.insert(r.name);
      EXPECT_EQ(CheckField(view, r, /*check_number=*/false), "");
    }
  }
  for (int i = 0; i < view->field_count(); ++i) {
    const FieldDescriptor* f = view->field(i);
    if (kViewNotCounters.contains(f->name())) continue;
    EXPECT_TRUE(prom.contains(f->name()))
        << "MetricsView." << f->name() << " is not a PROM row of " << kList;
  }
}

// Each served counter with its own value (its Stats field number times 1000 plus 7), from a
// stats message through the snapshot, the status reply's view and back, to the exposition.
TEST(CounterListTest, ExpositionServesEveryPromRowWithItsHelpAndValue) {
  pb::Stats stats;
  const google::protobuf::Reflection* reflection = stats.GetReflection();
  for (const Row& r : Rows()) {
    const FieldDescriptor* f = pb::Stats::descriptor()->FindFieldByName(r.name);
    ASSERT_NE(f, nullptr) << r.name;
    reflection->SetUInt64(&stats, f, static_cast<uint64_t>(r.field) * 1000 + 7);
  }
  metrics::MetricsSnapshot snapshot;
  metrics::CopyCounters(stats, &snapshot);
  const metrics::MetricsSnapshot round_trip =
      metrics::FromMetricsView(metrics::ToMetricsView(snapshot));
  const std::string text = metrics::RenderExposition(round_trip);
  auto parsed = metrics::testing::ParseExposition(text);
  ASSERT_TRUE(parsed.has_value()) << parsed.error() << "\n" << text;
  size_t served = 0;
  for (const Row& r : Rows()) {
    if (!r.prom) continue;
    ++served;
    SCOPED_TRACE(r.prom_name);
    ASSERT_TRUE(parsed->contains(r.prom_name)) << r.name << " is not served";
    const metrics::testing::ParsedFamily& family = parsed->at(r.prom_name);
    EXPECT_EQ(family.type, "counter");
    EXPECT_EQ(family.help, r.help);
    ASSERT_EQ(family.samples.size(), 1u);
    EXPECT_EQ(family.samples[0].value_text, std::to_string(r.field * 1000 + 7));
  }
  size_t counters = 0;
  for (const auto& [name, family] : *parsed) {
    if (family.type == "counter" && name != "cupmon_gpu_busy_seconds_total" &&
        name != "cupmon_stream_busy_seconds_total")
      ++counters;
  }
  EXPECT_EQ(counters, served) << "a counter family is served that is not a PROM row:\n" << text;
}

TEST(CounterListTest, DeployDocNamesEveryServedCounter) {
  std::ifstream in(CUPMON_DEPLOY_DOC);
  ASSERT_TRUE(in) << CUPMON_DEPLOY_DOC;
  std::stringstream text;
  text << in.rdbuf();
  for (const Row& r : Rows()) {
    if (r.prom) {
      EXPECT_NE(text.str().find("`" + r.prom_name + "`"), std::string::npos)
          << r.prom_name << " is served but docs/DEPLOY.md does not name it";
    }
  }
}

}  // namespace
}  // namespace cupmon
