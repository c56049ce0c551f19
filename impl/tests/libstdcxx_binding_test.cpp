#include <dlfcn.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace specgate {
namespace {

// The shared object that defines the function this binary calls.
std::string defining_object(void* function) {
  Dl_info info{};
  if (dladdr(function, &info) == 0 || info.dli_fname == nullptr) return "(none)";
  return std::filesystem::path(info.dli_fname).filename().string();
}

// libtorch's binaries export the copy of std::filesystem they link statically
// (pytorch/pytorch#133437). Where libtorch precedes libstdc++ in a binary's libraries, those
// copies take the binary's calls, and inline code from one compiler's headers meets out-of-line
// code from another's: with g++ 13 every test that made and removed a folder crashed.
TEST(LibstdcxxBinding, FilesystemComesFromTheSystemLibrary) {
  using RemoveAll = std::uintmax_t (*)(const std::filesystem::path&);
  using CreateDirectories = bool (*)(const std::filesystem::path&);
  EXPECT_EQ(defining_object(reinterpret_cast<void*>(static_cast<RemoveAll>(&std::filesystem::remove_all))),
            "libstdc++.so.6");
  EXPECT_EQ(defining_object(reinterpret_cast<void*>(static_cast<CreateDirectories>(&std::filesystem::create_directories))),
            "libstdc++.so.6");
}

}  // namespace
}  // namespace specgate
