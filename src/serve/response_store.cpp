#include "serve/response_store.h"

namespace orion::serve {

void ResponseStore::put(const std::string& id, nlohmann::json conversation) {
  std::lock_guard lock(mu_);
  const std::size_t bytes = conversation.dump().size();
  if (auto it = index_.find(id); it != index_.end()) {
    bytes_ -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
  }
  lru_.push_front({id, std::move(conversation), bytes});
  index_[id] = lru_.begin();
  bytes_ += bytes;
  while (lru_.size() > max_entries_ || (bytes_ > max_bytes_ && lru_.size() > 1)) {
    bytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().id);
    lru_.pop_back();
  }
}

std::optional<nlohmann::json> ResponseStore::get(const std::string& id) {
  std::lock_guard lock(mu_);
  const auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->conversation;
}

}  // namespace orion::serve
