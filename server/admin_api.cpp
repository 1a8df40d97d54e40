#include "server/admin_api.h"

#include "base/uuid.h"
#include "server/json_io.h"

namespace webhooker::server {

AdminApi::AdminApi(MainStore& store, EventsDbPool& eventsDbs, Dispatcher& dispatcher,
                   const SsrfGuard& guard, const CircuitBreakers& breakers)
    : store_(store),
      eventsDbs_(eventsDbs),
      dispatcher_(dispatcher),
      guard_(guard),
      breakers_(breakers) {}

std::optional<std::string> pathId(const httplib::Request& req, httplib::Response& res,
                                  size_t index, const char* what) {
  const std::string raw = req.matches[index];
  if (!isUuid(raw)) {
    sendError(res, 404, "not_found", std::string("no such ") + what);
    return std::nullopt;
  }
  return normalizeUuid(raw);
}

void AdminApi::registerRoutes(httplib::Server& http) {
  auto bind = [this](void (AdminApi::*handler)(const httplib::Request&, httplib::Response&)) {
    return [this, handler](const httplib::Request& req, httplib::Response& res) {
      (this->*handler)(req, res);
    };
  };
  const std::string webhooks = "/api/v1/webhooks";
  const std::string webhook = webhooks + "/([^/]+)";
  http.Get(webhooks, bind(&AdminApi::listWebhooks));
  http.Post(webhooks, bind(&AdminApi::createWebhook));
  http.Get(webhook, bind(&AdminApi::getWebhook));
  http.Patch(webhook, bind(&AdminApi::updateWebhook));
  http.Delete(webhook, bind(&AdminApi::deleteWebhook));
  http.Get(webhook + "/entrypoints", bind(&AdminApi::listEntrypoints));
  http.Post(webhook + "/entrypoints", bind(&AdminApi::createEntrypoint));
  http.Patch(webhook + "/entrypoints/([^/]+)", bind(&AdminApi::updateEntrypoint));
  http.Delete(webhook + "/entrypoints/([^/]+)", bind(&AdminApi::deleteEntrypoint));
  http.Get(webhook + "/targets", bind(&AdminApi::listTargets));
  http.Post(webhook + "/targets", bind(&AdminApi::createTarget));
  http.Get(webhook + "/targets/([^/]+)", bind(&AdminApi::getTarget));
  http.Patch(webhook + "/targets/([^/]+)", bind(&AdminApi::updateTarget));
  http.Delete(webhook + "/targets/([^/]+)", bind(&AdminApi::deleteTarget));
  // History and redrive.
  http.Get(webhook + "/events", bind(&AdminApi::listEvents));
  http.Get(webhook + "/events/([^/]+)", bind(&AdminApi::getEvent));
  http.Post(webhook + "/events/([^/]+)/redeliver", bind(&AdminApi::redeliverEvent));
  http.Get(webhook + "/deliveries", bind(&AdminApi::listDeliveries));
  http.Post(webhook + "/deliveries/([^/]+)/retry", bind(&AdminApi::retryDelivery));
  http.Post(webhook + "/replay", bind(&AdminApi::replay));
  http.Get(webhook + "/stats", bind(&AdminApi::webhookStats));
}

}  // namespace webhooker::server
