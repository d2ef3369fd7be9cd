// Tests RenderExposition (monitor/metrics/src/exposition.cc) through a strict line-by-line parser.
#include <gtest/gtest.h>

#include "cupmon/metrics/metrics_server.h"
#include "exposition_parser.h"

namespace cupmon::metrics {
namespace {

using testing::ParseExposition;
using testing::ParsedFamily;
using testing::ParsedSample;

MetricsSnapshot SampleSnapshot() {
  MetricsSnapshot s;
  s.version = "0.1.0";
  s.output_dir = "/data/cupmon";
  s.kernel_records = 1001;
  s.memcpy_records = 22;
  s.memset_records = 3;
  s.device_busy = {{1, 2'000'000'001}, {0, 1'500'000'000}};
  s.stream_busy = {{0, 13, 750'000'000}, {0, 7, 5}, {1, 7, 1'999'999'999}};
  s.raw_bytes = 123456789;
  s.compressed_bytes = 2345678;
  s.dropped_records = 4;
  s.pool_exhausted = 5;
  s.windows_opened = 6;
  s.windows_refused = 61;
  s.write_errors = 7;
  s.last_write_failed = true;
  s.files = 8;
  s.disk_bytes = 987654321;
  s.cupti_delivery_lag_ns = 2'500'000'001;
  s.cupti_gaps = 9;
  s.stranded_buffers = 10;
  s.lost_records = 11;
  s.lost_buffers = 12;
  s.zero_timestamp_records = 13;
  s.truncated_buffers = 14;
  return s;
}

const ParsedSample* Find(const testing::Exposition& e, const std::string& name,
                         const std::map<std::string, std::string>& labels = {}) {
  auto it = e.find(name);
  if (it == e.end()) return nullptr;
  for (const auto& s : it->second.samples) {
    if (s.labels == labels) return &s;
  }
  return nullptr;
}

TEST(ExpositionTest, EveryFamilyHasHelpTypeAndTheSnapshotValue) {
  const std::string text = RenderExposition(SampleSnapshot());
  auto parsed = ParseExposition(text);
  ASSERT_TRUE(parsed.has_value()) << parsed.error() << "\n" << text;
  const std::map<std::string, std::pair<std::string, std::string>> expected = {
      {"cupmon_kernel_records_total", {"counter", "1001"}},
      {"cupmon_memcpy_records_total", {"counter", "22"}},
      {"cupmon_memset_records_total", {"counter", "3"}},
      {"cupmon_raw_bytes_total", {"counter", "123456789"}},
      {"cupmon_compressed_bytes_total", {"counter", "2345678"}},
      {"cupmon_dropped_records_total", {"counter", "4"}},
      {"cupmon_pool_exhausted_total", {"counter", "5"}},
      {"cupmon_windows_opened_total", {"counter", "6"}},
      {"cupmon_windows_refused_total", {"counter", "61"}},
      {"cupmon_write_errors_total", {"counter", "7"}},
      {"cupmon_write_error", {"gauge", "1"}},
      {"cupmon_files", {"gauge", "8"}},
      {"cupmon_disk_bytes", {"gauge", "987654321"}},
      {"cupmon_cupti_delivery_lag_seconds", {"gauge", "2.500000001"}},
      {"cupmon_cupti_gaps_total", {"counter", "9"}},
      {"cupmon_stranded_buffers_total", {"counter", "10"}},
      {"cupmon_lost_records_total", {"counter", "11"}},
      {"cupmon_lost_buffers_total", {"counter", "12"}},
      {"cupmon_zero_timestamp_records_total", {"counter", "13"}},
      {"cupmon_truncated_buffers_total", {"counter", "14"}},
  };
  for (const auto& [name, type_value] : expected) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(parsed->contains(name));
    const ParsedFamily& family = parsed->at(name);
    EXPECT_EQ(family.type, type_value.first);
    EXPECT_FALSE(family.help.empty());
    ASSERT_EQ(family.samples.size(), 1u);
    EXPECT_TRUE(family.samples[0].labels.empty());
    EXPECT_EQ(family.samples[0].value_text, type_value.second);
  }
  for (const auto& [name, family] : *parsed) {
    EXPECT_TRUE(name.starts_with("cupmon_")) << name;
    if (family.type == "counter") {
      EXPECT_TRUE(name.ends_with("_total")) << name;
    }
  }
  const ParsedSample* info = Find(*parsed, "cupmon_info", {{"version", "0.1.0"}, {"output_dir", "/data/cupmon"}});
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->value_text, "1");
}

TEST(ExpositionTest, BusyTimesAreExactSecondsPerDeviceAndStreamSorted) {
  MetricsSnapshot s = SampleSnapshot();
  s.stream_busy.push_back({0, 7, 10});  // duplicate series: summed, not emitted twice
  const std::string text = RenderExposition(s);
  auto parsed = ParseExposition(text);
  ASSERT_TRUE(parsed.has_value()) << parsed.error();

  const ParsedFamily& devices = parsed->at("cupmon_gpu_busy_seconds_total");
  EXPECT_EQ(devices.type, "counter");
  ASSERT_EQ(devices.samples.size(), 2u);
  EXPECT_EQ(devices.samples[0].labels.at("gpu"), "0");
  EXPECT_EQ(devices.samples[0].value_text, "1.500000000");
  EXPECT_EQ(devices.samples[1].labels.at("gpu"), "1");
  EXPECT_EQ(devices.samples[1].value_text, "2.000000001");

  const ParsedFamily& streams = parsed->at("cupmon_stream_busy_seconds_total");
  ASSERT_EQ(streams.samples.size(), 3u);
  const ParsedSample* s07 = Find(*parsed, "cupmon_stream_busy_seconds_total", {{"gpu", "0"}, {"stream", "7"}});
  ASSERT_NE(s07, nullptr);
  EXPECT_EQ(s07->value_text, "0.000000015");
  EXPECT_EQ(streams.samples[0].labels.at("stream"), "7");  // sorted by (device, stream)
  EXPECT_EQ(streams.samples[1].labels.at("stream"), "13");
  EXPECT_EQ(streams.samples[2].labels.at("gpu"), "1");
  EXPECT_EQ(Find(*parsed, "cupmon_stream_busy_seconds_total", {{"gpu", "1"}, {"stream", "7"}})->value_text,
            "1.999999999");
}

// dcgm-exporter's labels, so that dashboards can join on them: `gpu`, `UUID` where known (in DCGM's
// spelling), `Hostname` on every per-GPU series and on cupmon_info; no `device` label, whose
// meaning differs in dcgm-exporter ("nvidia0").
TEST(ExpositionTest, PerGpuSeriesCarryDcgmExporterLabels) {
  MetricsSnapshot s = SampleSnapshot();
  s.hostname = "node-07";
  s.gpu_uuids[1] = std::string("\x5f\xd4\xb5\xea\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\xab\xcd", 16);
  auto parsed = ParseExposition(RenderExposition(s));
  ASSERT_TRUE(parsed.has_value()) << parsed.error();
  const ParsedSample* gpu1 = Find(*parsed, "cupmon_gpu_busy_seconds_total",
                                  {{"gpu", "1"}, {"UUID", "GPU-5fd4b5ea-0001-0203-0405-06070809abcd"},
                                   {"Hostname", "node-07"}});
  ASSERT_NE(gpu1, nullptr);
  EXPECT_EQ(gpu1->value_text, "2.000000001");
  // Device 0 has no known UUID: no UUID label rather than an empty one.
  EXPECT_NE(Find(*parsed, "cupmon_gpu_busy_seconds_total", {{"gpu", "0"}, {"Hostname", "node-07"}}), nullptr);
  EXPECT_NE(Find(*parsed, "cupmon_stream_busy_seconds_total",
                 {{"gpu", "1"}, {"stream", "7"}, {"UUID", "GPU-5fd4b5ea-0001-0203-0405-06070809abcd"},
                  {"Hostname", "node-07"}}),
            nullptr);
  EXPECT_EQ(parsed->at("cupmon_info").samples.at(0).labels.at("Hostname"), "node-07");
  for (const auto& [name, family] : *parsed)
    for (const ParsedSample& sample : family.samples) EXPECT_EQ(sample.labels.count("device"), 0u) << name;
}

TEST(ExpositionTest, GpuUuidIsWrittenAsNvidiaSmiAndDcgmWriteIt) {
  EXPECT_EQ(FormatGpuUuid(std::string(16, '\0')), "GPU-00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(FormatGpuUuid(std::string(16, '\xff')), "GPU-ffffffff-ffff-ffff-ffff-ffffffffffff");
  EXPECT_EQ(FormatGpuUuid("GPU-given-as-text"), "GPU-given-as-text");  // not 16 bytes: as given
}

TEST(ExpositionTest, NoDevicesStillRendersValidText) {
  MetricsSnapshot empty;
  auto parsed = ParseExposition(RenderExposition(empty));
  ASSERT_TRUE(parsed.has_value()) << parsed.error();
  EXPECT_TRUE(parsed->at("cupmon_gpu_busy_seconds_total").samples.empty());
  EXPECT_EQ(parsed->at("cupmon_write_error").samples[0].value_text, "0");
}

TEST(ExpositionTest, LabelValuesAreEscapedAndRoundTrip) {
  MetricsSnapshot s;
  s.version = "v\"1\"";
  s.output_dir = "/tmp/a\"b\\c\nd}e,f=g";
  const std::string text = RenderExposition(s);
  EXPECT_NE(text.find("output_dir=\"/tmp/a\\\"b\\\\c\\nd}e,f=g\""), std::string::npos) << text;
  EXPECT_NE(text.find("version=\"v\\\"1\\\"\""), std::string::npos) << text;
  auto parsed = ParseExposition(text);
  ASSERT_TRUE(parsed.has_value()) << parsed.error();
  const auto& labels = parsed->at("cupmon_info").samples.at(0).labels;
  EXPECT_EQ(labels.at("output_dir"), s.output_dir);
  EXPECT_EQ(labels.at("version"), s.version);
}

TEST(ExpositionTest, EscapeLabelValue) {
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
  EXPECT_EQ(EscapeLabelValue("a\\b"), "a\\\\b");
  EXPECT_EQ(EscapeLabelValue("\"q\""), "\\\"q\\\"");
  EXPECT_EQ(EscapeLabelValue("l1\nl2"), "l1\\nl2");
  EXPECT_EQ(EscapeLabelValue(""), "");
}

TEST(ExpositionTest, FormatNanosecondsAsSeconds) {
  EXPECT_EQ(FormatNanosecondsAsSeconds(0), "0.000000000");
  EXPECT_EQ(FormatNanosecondsAsSeconds(1), "0.000000001");
  EXPECT_EQ(FormatNanosecondsAsSeconds(1'000'000'000), "1.000000000");
  EXPECT_EQ(FormatNanosecondsAsSeconds(UINT64_MAX), "18446744073.709551615");
}

TEST(ExpositionParserTest, RejectsWhatPrometheusWouldNot) {
  // The parser is the test's oracle: make sure it can fail.
  EXPECT_FALSE(ParseExposition("cupmon_x 1").has_value());  // no trailing newline
  EXPECT_FALSE(ParseExposition("cupmon_x 1\n").has_value());  // sample before TYPE
  EXPECT_FALSE(ParseExposition("# TYPE cupmon_x counter\ncupmon_x{a=\"b\\q\"} 1\n").has_value());
  EXPECT_FALSE(ParseExposition("# TYPE cupmon_x counter\ncupmon_x{a=\"b} 1\n").has_value());
  EXPECT_FALSE(ParseExposition("# TYPE cupmon_x counter\ncupmon_x 1\ncupmon_x 2\n").has_value());
  EXPECT_FALSE(ParseExposition("# TYPE cupmon_x counter\ncupmon_x one\n").has_value());
  EXPECT_FALSE(ParseExposition("# TYPE cupmon_x bogus\n").has_value());
  EXPECT_FALSE(ParseExposition("# TYPE 1x counter\n").has_value());
  EXPECT_TRUE(ParseExposition("# HELP cupmon_x h\\\\i\n# TYPE cupmon_x counter\ncupmon_x{a=\"\\\"\"} 1\n")
                  .has_value());
}

TEST(ListenAddressTest, ParsesHostPortForms) {
  auto v4 = ParseListenAddress("127.0.0.1:9464");
  ASSERT_TRUE(v4.has_value()) << v4.error().message;
  EXPECT_EQ(v4->address, "127.0.0.1");
  EXPECT_EQ(v4->port, 9464);
  auto v6 = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->address, "::1");
  EXPECT_EQ(v6->port, 0);
  auto bare = ParseListenAddress(":9100");
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->address, "127.0.0.1");
  EXPECT_EQ(bare->port, 9100);
  MetricsOptions base;
  base.allow_non_loopback = true;
  auto kept = ParseListenAddress("0.0.0.0:1", base);
  ASSERT_TRUE(kept.has_value());
  EXPECT_TRUE(kept->allow_non_loopback);

  for (const char* bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:9x", "::1:9464",
                          "[::1:9464", ""}) {
    auto r = ParseListenAddress(bad);
    EXPECT_FALSE(r.has_value()) << bad;
    if (!r) {
      EXPECT_NE(r.error().message.find("expected ADDRESS:PORT"), std::string::npos);
    }
  }
}

// The node agent's rendering (cupmonctl serve): several processes, each family once, each series
// labelled with its process first. The strict parser refuses a second HELP/TYPE of a family.
TEST(ExpositionTest, SeveralProcessesShareEachFamilyAndKeepTheirOwnLabels) {
  LabelledSnapshot a{{{"pid", "11"}, {"rank", "0"}, {"job", "77"}}, SampleSnapshot()};
  LabelledSnapshot b{{{"pid", "12"}, {"rank", ""}, {"job", "say \"hi\""}}, SampleSnapshot()};
  a.snapshot.hostname = b.snapshot.hostname = "node7";
  a.snapshot.gpu_uuids[0] =
      std::string("\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff", 16);
  b.snapshot.kernel_records = 5;
  const std::string text = RenderExposition(std::vector<LabelledSnapshot>{a, b});
  auto parsed = ParseExposition(text);
  ASSERT_TRUE(parsed.has_value()) << parsed.error() << "\n" << text;
  const ParsedSample* ka =
      Find(*parsed, "cupmon_kernel_records_total", {{"pid", "11"}, {"rank", "0"}, {"job", "77"}});
  const ParsedSample* kb = Find(*parsed, "cupmon_kernel_records_total",
                                {{"pid", "12"}, {"rank", ""}, {"job", "say \"hi\""}});
  ASSERT_NE(ka, nullptr) << text;
  ASSERT_NE(kb, nullptr) << text;
  EXPECT_EQ(ka->value_text, "1001");
  EXPECT_EQ(kb->value_text, "5");
  // The DCGM labels are kept, after the process's.
  const ParsedSample* busy = Find(*parsed, "cupmon_gpu_busy_seconds_total",
                                  {{"pid", "11"},
                                   {"rank", "0"},
                                   {"job", "77"},
                                   {"gpu", "0"},
                                   {"UUID", "GPU-00112233-4455-6677-8899-aabbccddeeff"},
                                   {"Hostname", "node7"}});
  ASSERT_NE(busy, nullptr) << text;
  EXPECT_EQ(busy->value_text, "1.500000000");
  EXPECT_NE(text.find("cupmon_info{pid=\"11\",rank=\"0\",job=\"77\",version="), std::string::npos)
      << text;
  EXPECT_EQ(parsed->at("cupmon_stream_busy_seconds_total").samples.size(), 6u);
  // One process without labels is exactly the process's own endpoint.
  EXPECT_EQ(RenderExposition(std::vector<LabelledSnapshot>{{{}, SampleSnapshot()}}),
            RenderExposition(SampleSnapshot()));
  EXPECT_EQ(RenderExposition(std::vector<LabelledSnapshot>{}).find("cupmon_info{"),
            std::string::npos);
}

// The status reply carries the snapshot as pb::MetricsView; every figure survives the trip.
TEST(ExpositionTest, MetricsViewRoundTripKeepsEveryFigure) {
  MetricsSnapshot s = SampleSnapshot();
  s.gpu_uuids[1] = std::string(16, '\x5a');
  pb::MetricsView wire;
  ASSERT_TRUE(wire.ParseFromString(ToMetricsView(s).SerializeAsString()));
  MetricsSnapshot back = FromMetricsView(wire);
  back.version = s.version;  // not part of the view
  back.output_dir = s.output_dir;
  EXPECT_EQ(RenderExposition(back), RenderExposition(s));
  EXPECT_EQ(back.gpu_uuids, s.gpu_uuids);
  EXPECT_EQ(back.stream_busy.size(), 3u);
  EXPECT_EQ(back.disk_bytes, 987654321u);
}

}  // namespace
}  // namespace cupmon::metrics
