#pragma once

#include <filesystem>

#include "impl/decoding/token_tree.h"

namespace specgate::cli {

// A tree shape file: EAGLE's and Medusa's tree choices, a JSON list of paths of ranks
// ([[0], [1], [0, 0], ...]), or {"parents": [-1, 0, ...]} with optional "ranks". Throws
// InputError naming `flag`, the file and the field.
TreeShape read_tree_file(const std::filesystem::path& path, const char* flag);

}  // namespace specgate::cli
