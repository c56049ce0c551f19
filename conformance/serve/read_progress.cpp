#include "conformance/serve/read_progress.h"

#include <linux/sockios.h>
#include <sys/ioctl.h>

namespace specgate::cli {

bool ReadProgress::advanced(int socket) {
  int queued = 0;  // bytes sent but not acknowledged, or not sent yet
  if (::ioctl(socket, SIOCOUTQ, &queued) != 0) return true;  // not a TCP socket's state to judge by
  const uint64_t acknowledged = handed_ - static_cast<uint64_t>(queued);
  const bool advanced = queued == 0 || acknowledged > acknowledged_;
  acknowledged_ = acknowledged;
  return advanced;
}

}  // namespace specgate::cli
