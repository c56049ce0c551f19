#include "conformance/serve/http_framing.h"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

namespace specgate::cli {

namespace http = boost::beast::http;

void bound(RequestParser& parser, const ConnectionLimits& limits) {
  parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
  parser.body_limit(static_cast<uint64_t>(limits.max_body_bytes));
}

std::optional<Refusal> refusal_after_header(const RequestParser& parser) {
  if (parser.get().find(http::field::transfer_encoding) == parser.get().end()) return std::nullopt;
  return Refusal{http::status::length_required, "send the body with Content-Length: this server reads no Transfer-Encoding"};
}

bool expects_continue(const RequestParser& parser) {
  const auto expect = parser.get().find(http::field::expect);
  return expect != parser.get().end() && boost::beast::iequals(expect->value(), "100-continue");
}

std::optional<Refusal> refusal_after_error(boost::beast::error_code error, const ConnectionLimits& limits) {
  if (error == http::error::body_limit)
    return Refusal{http::status::payload_too_large,
                   "the request body is larger than " + std::to_string(limits.max_body_bytes) + " bytes (--max-body-bytes)"};
  if (error == http::error::header_limit)
    return Refusal{http::status::request_header_fields_too_large,
                   "the request headers are larger than " + std::to_string(limits.max_header_bytes) +
                       " bytes (--max-header-bytes)"};
  if (error.category() == http::make_error_code(http::error::bad_target).category() &&
      error != http::error::end_of_stream && error != http::error::partial_message)
    return Refusal{http::status::bad_request, "malformed HTTP request: " + error.message()};
  return std::nullopt;
}

}  // namespace specgate::cli
