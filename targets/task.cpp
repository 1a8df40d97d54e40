#include "targets/task.h"

namespace webhooker {

std::vector<Task> firstAttempts(const std::string& webhookId, InboundEvent event,
                                const IngestOutcome& stored,
                                const std::function<std::string(const std::string& targetId)>& targetType) {
  std::vector<Task> tasks;
  tasks.reserve(stored.deliveries.size());
  const bool inlined = event.body.size() <= Task::kInlineBodyLimit;
  for (const StoredDelivery& d : stored.deliveries) {
    Task task;
    task.deliveryId = d.id;
    task.eventId = stored.eventId;
    task.webhookId = webhookId;
    task.targetId = d.targetId;
    task.targetType = targetType(d.targetId);
    if (inlined && &d == &stored.deliveries.back())
      task.payload = EventPayload{std::move(event.method), std::move(event.headers),
                                  std::move(event.contentType), std::move(event.body),
                                  stored.receivedAt, std::move(event.eventType)};
    else if (inlined)
      task.payload = EventPayload{event.method, event.headers, event.contentType, event.body,
                                  stored.receivedAt, event.eventType};
    tasks.push_back(std::move(task));
  }
  return tasks;
}

}  // namespace webhooker
