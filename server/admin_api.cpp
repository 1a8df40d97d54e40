#include "server/admin_api.h"

#include <functional>
#include <string>
#include <vector>

#include "base/uuid.h"
#include "server/json_io.h"

namespace webhooker::server {

AdminApi::AdminApi(MainStore& store, EventsDbPool& eventsDbs, Dispatcher& dispatcher,
                   const SsrfGuard& guard, CircuitBreakers& breakers, MoveFence& moveFence,
                   RoutingEvaluator* routing, OperationalEvents* operationalEvents,
                   AttemptObserver* attempts)
    : store_(store),
      eventsDbs_(eventsDbs),
      dispatcher_(dispatcher),
      guard_(guard),
      breakers_(breakers),
      moveFence_(moveFence),
      routing_(routing),
      operationalEvents_(operationalEvents),
      attempts_(attempts) {}

std::optional<std::string> pathId(const HttpRequest& req, HttpResponse& res,
                                  size_t index, const char* what) {
  const std::string raw = req.matches[index];
  if (!isUuid(raw)) {
    sendError(res, 404, error_code::kNotFound, std::string("no such ") + what);
    return std::nullopt;
  }
  return normalizeUuid(raw);
}

namespace {

// `raw` as an id when it is shaped like one, otherwise the one id `named`
// finds for it as a name.
std::optional<std::string> resolveRef(
    const std::string& raw, const char* what, HttpResponse& res,
    const std::function<Result<std::vector<std::string>>(const std::string&)>& named) {
  if (isUuid(raw)) return normalizeUuid(raw);
  auto ids = named(raw);
  if (!ids) {
    sendError(res, ids.error());
    return std::nullopt;
  }
  if (ids->size() == 1) return ids->front();
  const std::string quoted = nlohmann::json(raw).dump();
  if (ids->empty()) {
    sendError(res, 404, error_code::kNotFound,
              std::string("no ") + what + " has the id or name " + quoted);
    return std::nullopt;
  }
  sendJson(res, 409,
           {{"error",
             {{"code", error_code::kAmbiguousName},
              {"message", std::to_string(ids->size()) + " " + what + "s are named " + quoted +
                              "; use one of their ids"},
              {"candidates", ids.value()}}}});
  return std::nullopt;
}

}  // namespace

std::optional<std::string> webhookRefOf(MainStore& store, const HttpRequest& req,
                                        HttpResponse& res) {
  return resolveRef(req.matches[1], "webhook", res,
                    [&store](const std::string& name) { return store.webhookIdsNamed(name); });
}

std::optional<std::string> AdminApi::webhookRef(const HttpRequest& req, HttpResponse& res) {
  return webhookRefOf(store_, req, res);
}

std::optional<std::string> AdminApi::targetRef(const HttpRequest& req, HttpResponse& res,
                                               const std::string& webhookId) {
  return resolveRef(req.matches[2], "target", res, [&](const std::string& name) {
    return store_.targetIdsNamed(webhookId, name);
  });
}

std::optional<std::string> AdminApi::entrypointRef(const HttpRequest& req, HttpResponse& res,
                                                   const std::string& webhookId) {
  return resolveRef(req.matches[2], "entrypoint", res, [&](const std::string& name) {
    return store_.entrypointIdsNamed(webhookId, name);
  });
}

void AdminApi::registerRoutes(Router& router) {
  auto bind = [this](void (AdminApi::*handler)(const HttpRequest&, HttpResponse&)) {
    return [this, handler](const HttpRequest& req, HttpResponse& res) {
      (this->*handler)(req, res);
    };
  };
  // A write to the webhook of the path: refused while it moves out.
  auto write = [this](void (AdminApi::*handler)(const HttpRequest&, HttpResponse&)) {
    return [this, handler](const HttpRequest& req, HttpResponse& res) {
      auto id = webhookRef(req, res);
      if (!id) return;
      moveFence_.guard(*id, res, [&] { (this->*handler)(req, res); });
    };
  };
  const std::string webhooks = "/api/v1/webhooks";
  const std::string webhook = webhooks + "/{id}";
  router.add("GET", webhooks, bind(&AdminApi::listWebhooks));
  router.add("POST", webhooks, bind(&AdminApi::createWebhook));
  router.add("GET", webhook, bind(&AdminApi::getWebhook));
  router.add("PATCH", webhook, write(&AdminApi::updateWebhook));
  router.add("DELETE", webhook, write(&AdminApi::deleteWebhook));
  router.add("GET", webhook + "/entrypoints", bind(&AdminApi::listEntrypoints));
  router.add("POST", webhook + "/entrypoints", write(&AdminApi::createEntrypoint));
  router.add("PATCH", webhook + "/entrypoints/{id}", write(&AdminApi::updateEntrypoint));
  router.add("DELETE", webhook + "/entrypoints/{id}", write(&AdminApi::deleteEntrypoint));
  router.add("GET", webhook + "/targets", bind(&AdminApi::listTargets));
  router.add("POST", webhook + "/targets", write(&AdminApi::createTarget));
  router.add("GET", webhook + "/targets/{id}", bind(&AdminApi::getTarget));
  router.add("PATCH", webhook + "/targets/{id}", write(&AdminApi::updateTarget));
  router.add("DELETE", webhook + "/targets/{id}", write(&AdminApi::deleteTarget));
  router.add("POST", webhook + "/targets/{id}/preview", bind(&AdminApi::previewTarget));
  // Pull targets' consumers.
  router.add("POST", webhook + "/targets/{id}/lease", write(&AdminApi::leaseDeliveries));
  router.add("POST", webhook + "/targets/{id}/ack", write(&AdminApi::ackDeliveries));
  router.add("POST", webhook + "/targets/{id}/nack", write(&AdminApi::nackDeliveries));
  router.add("POST", webhook + "/targets/{id}/extend", write(&AdminApi::extendLease));
  // History and redrive.
  router.add("GET", webhook + "/events", bind(&AdminApi::listEvents));
  router.add("GET", webhook + "/events/{id}", bind(&AdminApi::getEvent));
  router.add("POST", webhook + "/events/{id}/redeliver", write(&AdminApi::redeliverEvent));
  router.add("GET", webhook + "/deliveries", bind(&AdminApi::listDeliveries));
  router.add("POST", webhook + "/deliveries/{id}/retry", write(&AdminApi::retryDelivery));
  router.add("POST", webhook + "/replay", write(&AdminApi::replay));
  router.add("GET", webhook + "/stats", bind(&AdminApi::webhookStats));
  const std::string operational = "/api/v1/settings/operational-webhook";
  router.add("GET", operational, bind(&AdminApi::getOperationalWebhook));
  router.add("PUT", operational, bind(&AdminApi::putOperationalWebhook));
  router.add("DELETE", operational, bind(&AdminApi::deleteOperationalWebhook));
}

}  // namespace webhooker::server
