#pragma once

#include <cstddef>
#include <cstdint>

namespace specgate::cli {

// Whether a client reads what a stream sends it, seen from the server's socket: the bytes it has
// acknowledged (those handed to the kernel less those still in the socket's send queue) grow, or
// none wait for it. Buffers do not hide a client that stopped reading: once its receive window is
// full, and its kernel has not grown that window without reads, it acknowledges nothing more
// whatever the server's send buffer still takes.
class ReadProgress {
 public:
  // `bytes` more handed to the kernel (a write completed).
  void handed(size_t bytes) { handed_ += bytes; }
  // Since the last call: true when the client acknowledged more, or holds everything handed to
  // it; false when it acknowledged nothing while bytes wait. `socket`: the connection's descriptor.
  bool advanced(int socket);

 private:
  uint64_t handed_ = 0, acknowledged_ = 0;
};

}  // namespace specgate::cli
