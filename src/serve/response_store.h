#pragma once
// The conversations of stored responses, for a later request's previous_response_id: kept in
// memory, the least recently used dropped past a count and a byte budget (the server keeps no
// conversation forever). Safe to call from any thread.
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace orion::serve {

class ResponseStore {
 public:
  explicit ResponseStore(std::size_t max_entries = 1024, std::size_t max_bytes = std::size_t{64} << 20)
      : max_entries_(max_entries), max_bytes_(max_bytes) {}
  void put(const std::string& id, nlohmann::json conversation);
  std::optional<nlohmann::json> get(const std::string& id);

 private:
  struct Entry {
    std::string id;
    nlohmann::json conversation;
    std::size_t bytes = 0;
  };
  std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  std::size_t bytes_ = 0, max_entries_, max_bytes_;
};

}  // namespace orion::serve
