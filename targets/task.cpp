#include "targets/task.h"

namespace webhooker {

std::vector<Task> firstAttempts(const std::string& webhookId, InboundEvent event,
                                const IngestOutcome& stored,
                                const std::function<TargetType(const std::string& targetId)>& targetType) {
  std::vector<Task> tasks;
  tasks.reserve(stored.deliveries.size());
  std::shared_ptr<const EventPayload> payload;
  if (event.body.size() <= Task::kInlineBodyLimit)
    payload = std::make_shared<const EventPayload>(EventPayload{
        std::move(event.method), std::move(event.headers), std::move(event.contentType),
        std::move(event.body), stored.receivedAt, std::move(event.eventType)});
  for (const StoredDelivery& d : stored.deliveries) {
    Task task;
    task.deliveryId = d.id;
    task.eventId = stored.eventId;
    task.webhookId = webhookId;
    task.targetId = d.targetId;
    task.targetType = targetType(d.targetId);
    task.payload = payload;
    tasks.push_back(std::move(task));
  }
  return tasks;
}

Task nextAttempt(const std::string& webhookId, const UnfinishedDelivery& d, TargetType targetType) {
  Task task;
  task.deliveryId = d.id;
  task.eventId = d.eventId;
  task.webhookId = webhookId;
  task.targetId = d.targetId;
  task.targetType = targetType;
  task.attempt = d.attempts + 1;
  task.seriesStart = d.seriesStart;
  return task;
}

}  // namespace webhooker
