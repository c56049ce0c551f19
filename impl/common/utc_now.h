#pragma once

#include <string>

namespace specgate {

// The time now in UTC as reports write it: "2026-11-25T02:03:04Z".
std::string utc_now();

}  // namespace specgate
