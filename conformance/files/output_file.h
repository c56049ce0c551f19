#pragma once

#include <filesystem>
#include <functional>
#include <ostream>

namespace specgate::cli {

// Creates the file's folder, opens it, lets `write` fill it, and checks that every byte
// reached the disk; InputError naming the path otherwise.
void write_output_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);

}  // namespace specgate::cli
