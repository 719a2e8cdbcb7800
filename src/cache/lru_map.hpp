#pragma once
// A map that remembers use order and keeps the sum of its items' byte sizes
// within a budget by dropping the least recently used. Not thread-safe: the
// cache tiers call it under their own lock.
#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpufeed::loader::cache {

template <class Key, class Value>
class LruMap {
 public:
  struct Item {
    Key key;
    Value value;
    std::uint64_t bytes = 0;
  };

  explicit LruMap(std::uint64_t budget_bytes) : budget_(budget_bytes) {}

  // The value for `key`, now the most recently used; nullptr when absent.
  Value* touch(const Key& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->value;
  }

  // The value for `key` without changing the order; nullptr when absent.
  Value* peek(const Key& key) {
    const auto it = index_.find(key);
    return it == index_.end() ? nullptr : &it->second->value;
  }

  // Inserts or replaces `key` as the most recently used item, then drops
  // least recently used items into `evicted` until the total fits the budget.
  // An item larger than the whole budget is not inserted (returns false) and
  // any older item for `key` stays.
  bool put(Key key, Value value, std::uint64_t bytes, std::vector<Item>& evicted) {
    if (bytes > budget_) return false;
    if (const auto it = index_.find(key); it != index_.end()) {
      bytes_ -= it->second->bytes;
      order_.erase(it->second);
      index_.erase(it);
    }
    order_.push_front(Item{key, std::move(value), bytes});
    index_.emplace(std::move(key), order_.begin());
    bytes_ += bytes;
    while (bytes_ > budget_) {
      auto& oldest = order_.back();
      bytes_ -= oldest.bytes;
      index_.erase(oldest.key);
      evicted.push_back(std::move(oldest));
      order_.pop_back();
    }
    return true;
  }

  std::optional<Item> remove(const Key& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    Item item = std::move(*it->second);
    bytes_ -= item.bytes;
    order_.erase(it->second);
    index_.erase(it);
    return item;
  }

  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t budget() const { return budget_; }
  std::size_t size() const { return index_.size(); }

  // Keys from the most to the least recently used.
  std::vector<Key> keys_by_recency() const {
    std::vector<Key> keys;
    keys.reserve(order_.size());
    for (const auto& item : order_) keys.push_back(item.key);
    return keys;
  }

 private:
  std::uint64_t budget_;
  std::uint64_t bytes_ = 0;
  std::list<Item> order_;  // front: most recently used
  std::unordered_map<Key, typename std::list<Item>::iterator> index_;
};

}  // namespace gpufeed::loader::cache
