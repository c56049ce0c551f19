#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace specgate {

// Incremental SHA-256 (OpenSSL's libcrypto, which uses the CPU's SHA instructions).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view bytes);
  // Lowercase hex of the digest of everything passed to update(); ends the computation.
  std::string hex_digest();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

// The hex SHA-256 of a whole file; throws InputError when it cannot be read.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace specgate
