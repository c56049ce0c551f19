#pragma once

#include <ftw.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace specgate {

// Removes a folder and everything in it, if it exists. Not std::filesystem::remove_all: libtorch's
// binaries export a copy of it (pytorch/pytorch#133437) that jumped to address 0 wherever it took
// the call (PyTorch 2.11.0+cu130 under g++ 13; LibstdcxxBinding says which copy a binary calls).
inline void remove_tree(const std::filesystem::path& dir) {
  nftw(dir.c_str(), [](const char* path, const struct stat*, int, FTW*) { return std::remove(path); }, 16,
       FTW_DEPTH | FTW_PHYS);
}

// A test fixture owning an empty folder, unique to the process and test, removed afterwards.
class TempFolderTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("specgate_" + std::to_string(::getpid()) + "_" + testing::UnitTest::GetInstance()->current_test_info()->name());
    remove_tree(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { remove_tree(dir_); }

  std::filesystem::path dir_;
};

}  // namespace specgate
