#include "device/ane_request_cache.h"

#include <algorithm>

namespace orion::device {

std::uint64_t AneRequestCache::new_serial() {
  const std::lock_guard lock(mutex_);
  return next_serial_++;
}

AneRequestCache::Request AneRequestCache::get(int program, const Key& key, const std::function<Request()>& make) {
  {
    const std::lock_guard lock(mutex_);
    if (auto it = requests_.find({program, key}); it != requests_.end()) return it->second;
  }
  // The calls for one program never overlap, so nobody else makes this request meanwhile.
  Request made = make();
  const std::lock_guard lock(mutex_);
  return requests_.try_emplace({program, key}, std::move(made)).first->second;
}

void AneRequestCache::forget(std::uint64_t serial) {
  std::vector<Request> dropped;  // released after the lock: a release may take time
  {
    const std::lock_guard lock(mutex_);
    for (auto it = requests_.begin(); it != requests_.end();) {
      const Key& key = it->first.second;
      if (std::find(key.begin(), key.end(), serial) == key.end()) {
        ++it;
        continue;
      }
      dropped.push_back(std::move(it->second));
      it = requests_.erase(it);
    }
  }
}

void AneRequestCache::clear() {
  std::map<std::pair<int, Key>, Request> dropped;
  const std::lock_guard lock(mutex_);
  dropped.swap(requests_);
}

std::size_t AneRequestCache::size() const {
  const std::lock_guard lock(mutex_);
  return requests_.size();
}

}  // namespace orion::device
