// The --tree file reader: EAGLE's and Medusa's choices and parents read alike; every file that is
// not a tree within the flags' limits, or not a regular file, is one InputError naming the file,
// the line, the field and the limit.
#include <sys/stat.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "impl/common/error.h"
#include "impl/decoding/tree_file.h"
#include "impl/tests/temp_folder.h"

namespace specgate {
namespace {

using testing::HasSubstr;
using testing::StartsWith;

class TreeFileTest : public TempFolderTest {
 protected:
  std::filesystem::path write(const std::string& text) {
    const std::filesystem::path path = dir_ / "tree.json";
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  // The message read_tree_file throws for `path` and a vocabulary of 259 tokens.
  static std::string error_reading(const std::filesystem::path& path) {
    try {
      read_tree_file(path, "--tree t.json", 259);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  }
  std::string error_for(const std::string& text) { return error_reading(write(text)); }
};

std::string list(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : ", ") + item;
  return "[" + text + "]";
}

TEST_F(TreeFileTest, ChoicesAndParentsGiveTheSameNodes) {
  const TreeNodes choices = read_tree_file(write("[[0], [1], [0, 0], [0, 2]]"), "--tree t.json", 259);
  EXPECT_EQ(choices.parents, (std::vector<int64_t>{-1, -1, 0, 0}));
  EXPECT_EQ(choices.ranks, (std::vector<int64_t>{0, 1, 0, 2}));
  const TreeNodes parents = read_tree_file(write(R"({"parents": [-1, -1, 0, 0], "ranks": [0, 1, 0, 2]})"), "--tree t.json", 259);
  EXPECT_EQ(parents.parents, choices.parents);
  EXPECT_EQ(parents.ranks, choices.ranks);
  EXPECT_EQ(read_tree_file(write(R"({"parents": [-1, -1, 0]})"), "--tree t.json", 259).ranks, (std::vector<int64_t>{0, 1, 0}));
}

TEST_F(TreeFileTest, DeepNestingIsRefusedBeforeItIsParsed) {
  EXPECT_EQ(error_for(std::string(100000, '[') + std::string(100000, ']')),
            "--tree t.json: not valid JSON at line 1, column 513: lists and objects nested deeper than 512 levels");
}

TEST_F(TreeFileTest, WhatIsNotARegularFileIsRefusedAtOnce) {
  EXPECT_EQ(error_reading(dir_), "--tree t.json: not a regular file (a folder)");
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(error_reading(dir_ / "fifo"), "--tree t.json: not a regular file (a FIFO)");
  EXPECT_EQ(error_reading(dir_ / "absent"), "--tree t.json: no such file");
}

TEST_F(TreeFileTest, AFileLargerThanAJsonFileMayBeIsRefusedUnread) {
  const std::filesystem::path path = write("[[0]]");
  std::filesystem::resize_file(path, kMaxJsonFileBytes + 1);
  EXPECT_EQ(error_reading(path), "--tree t.json: 67108865 bytes, more than the 64 MiB a JSON file may be");
}

TEST_F(TreeFileTest, TheFlagsLimitsAreKept) {
  EXPECT_THAT(error_for("[]"), StartsWith("--tree t.json: the tree has no node"));
  EXPECT_THAT(error_for(R"({"parents": []})"), StartsWith("--tree t.json: the tree has no node"));
  std::vector<std::string> nodes(9, "-1");
  for (int j = 0; j < 504; ++j) nodes.push_back(std::to_string(j / 64));
  EXPECT_EQ(error_for("{\"parents\": " + list(nodes) + "}"), "--tree t.json: 513 nodes, more than the 512 a tree may have (as --tree-nodes)");
  nodes.pop_back();
  EXPECT_EQ(read_tree_file(write("{\"parents\": " + list(nodes) + "}"), "--tree t.json", 259).parents.size(), 512u);
  std::vector<std::string> chain;
  for (int i = 0; i < 33; ++i) chain.push_back(std::to_string(i - 1));
  EXPECT_EQ(error_for("{\"parents\": " + list(chain) + "}"),
            "--tree t.json:1: field 'parents[32]': node 32 at depth 33, deeper than the 32 levels a tree may have (as --tree-depth)");
  EXPECT_EQ(error_for("{\"parents\": " + list(std::vector<std::string>(65, "-1")) + "}"),
            "--tree t.json:1: field 'parents[64]': node 64 is child 65 of its parent, more than the 64 children a node may "
            "have (as --tree-topk)");
}

TEST_F(TreeFileTest, RanksAreTokensOfTheDraftsVocabulary) {
  EXPECT_EQ(error_for("[[0],\n [300]]"),
            "--tree t.json:2: field '[1][0]': expected a rank in [0, 258] (the draft's vocabulary has 259 tokens), got number 300");
  EXPECT_THAT(error_for(R"({"parents": [-1], "ranks": [259]})"), StartsWith("--tree t.json:1: field 'ranks[0]': expected a rank in [0, 258]"));
  try {
    read_tree_file(write(R"({"parents": [-1, -1, -1, -1]})"), "--tree t.json", 3);
    FAIL() << "a fourth child on a 3-token vocabulary";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("a node of rank 3, not a rank in [0, 2]"));
  }
}

TEST_F(TreeFileTest, ATreesOwnErrorsNameTheLineAndTheField) {
  EXPECT_EQ(error_for("[[0],\n [1, 1]]"), "--tree t.json:2: field '[1]': its parent's path is not an earlier choice");
  EXPECT_EQ(error_for("[[0], [0]]"), "--tree t.json:1: field '[1]': the path of an earlier choice");
  EXPECT_EQ(error_for(R"({"parents": [-1, 1]})"), "--tree t.json:1: field 'parents[1]': node 1's parent 1 is neither -1 (the root) nor an earlier node");
  EXPECT_EQ(error_for(R"({"parents": [-1, -1], "ranks": [3, 3]})"), "--tree t.json:1: field 'ranks[1]': node 1's rank 3 is a sibling's");
  EXPECT_EQ(error_for(R"({"parents": [-1], "extra": 1})"), "--tree t.json:1: field 'extra': not a field of a tree");
  EXPECT_EQ(error_for("{\"ranks\": [0]}"), "--tree t.json: expected a list of tree choices or an object with 'parents', got object");
}

}  // namespace
}  // namespace specgate
