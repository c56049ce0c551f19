#include "conformance/collect/server_check.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "impl/common/error.h"

namespace specgate::cli {
namespace {

// The ids of /v1/models' {"data": [{"id": ...}, ...]}; none when the body is not that.
std::vector<std::string> listed_models(const std::string& body) {
  const nlohmann::json listing = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  std::vector<std::string> ids;
  if (!listing.is_object() || !listing.contains("data") || !listing["data"].is_array()) return ids;
  for (const nlohmann::json& model : listing["data"]) {
    if (model.is_object() && model.contains("id") && model["id"].is_string()) ids.push_back(model["id"].get<std::string>());
  }
  return ids;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "'" : ", '") + name.substr(0, 200) + "'";
  return out;
}

}  // namespace

std::vector<std::string> check_server(const Endpoint& endpoint, const Dialect& dialect, const std::string& model,
                                      const HttpLimits& http) {
  HttpClient client(endpoint, {.timeout_seconds = std::min(http.timeout_seconds, 10.0), .max_response_bytes = int64_t{1} << 20});
  const std::string url = endpoint_url(endpoint);
  HttpResponse models = client.get("/v1/models");
  if (models.status == 0)
    throw InputError("--endpoint " + url + ": no server answers (" + models.error + ")");
  if (models.status != 200) {
    const HttpResponse health = client.get("/health");
    if (health.status == 0) throw InputError("--endpoint " + url + ": no server answers (" + health.error + ")");
    if (health.status >= 500 && health.status != 501)  // 501: no GET at all
      throw InputError("--endpoint " + url + ": the server is not ready (GET /health answered " + std::to_string(health.status) + ")");
    return {};
  }
  std::vector<std::string> listed = listed_models(models.body);
  if (dialect.routes_by_model() && !model.empty() && !listed.empty() &&
      std::find(listed.begin(), listed.end(), model) == listed.end())
    throw InputError("--model '" + model.substr(0, 200) + "': the server at " + url + " serves " + quoted_list(listed) +
                     " (GET /v1/models)");
  return listed;
}

}  // namespace specgate::cli
