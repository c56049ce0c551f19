#include "impl/common/utf8.h"

#include <gtest/gtest.h>

namespace specgate {
namespace {

TEST(Utf8Lossy, ReplacesEachMaximalInvalidSequenceOnce) {
  EXPECT_EQ(utf8_lossy("a\xC3"), "a\xEF\xBF\xBD");
  EXPECT_EQ(utf8_lossy("\xE2\x82x\xFF\xED\xA0\x80"), "\xEF\xBF\xBDx\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98\x80 ok"), "\xF0\x9F\x98\x80 ok");
}

TEST(Utf8UnfinishedTail, CountsOnlyBytesThatMoreBytesCouldComplete) {
  EXPECT_EQ(utf8_unfinished_tail(""), 0u);
  EXPECT_EQ(utf8_unfinished_tail("ok"), 0u);
  EXPECT_EQ(utf8_unfinished_tail("a\xC3"), 1u);
  EXPECT_EQ(utf8_unfinished_tail("a\xE2\x82"), 2u);
  EXPECT_EQ(utf8_unfinished_tail("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8_unfinished_tail("\xF0\x9F\x98\x80"), 0u);  // whole
  EXPECT_EQ(utf8_unfinished_tail("a\xFF"), 0u);              // starts nothing
  EXPECT_EQ(utf8_unfinished_tail("a\xE0\x80"), 0u);          // overlong: no byte completes it
  EXPECT_EQ(utf8_unfinished_tail("a\x80"), 0u);              // a continuation with no lead
}

}  // namespace
}  // namespace specgate
