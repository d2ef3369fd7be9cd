// CSV text fields (decoder/src/text/csv.h), the one quoting of every CSV output.
#include "text/csv.h"

#include <gtest/gtest.h>

#include <string>

namespace cupmon::decoder {
namespace {

TEST(CsvTest, FieldsAreQuotedWithQuotesDoubled) {
  EXPECT_EQ(CsvQuote(""), R"("")");
  EXPECT_EQ(CsvQuote("a,b"), R"("a,b")");
  EXPECT_EQ(CsvQuote(R"(say "hi")"), R"("say ""hi""")");
  std::string row = "x,";
  AppendCsvField(row, "\"");
  EXPECT_EQ(row, R"(x,"""")");
}

}  // namespace
}  // namespace cupmon::decoder
