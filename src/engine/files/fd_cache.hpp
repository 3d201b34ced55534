// Open file descriptors by manifest entry, opened on first use and shared by
// every lane thread. Bounded, so a tree of 100 000 files does not exhaust
// the descriptor limit: when full, an entry is dropped from the cache; a
// thread still using it keeps it open through its shared_ptr.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "engine/security/unique_fd.h"

namespace braid::files {

class FdCache {
 public:
  using Fd = std::shared_ptr<security::UniqueFd>;
  /// Opens the entry's file; returns a valid fd or sets `error`.
  using Opener = std::function<security::UniqueFd(size_t entry, std::string& error)>;

  FdCache(size_t capacity, Opener opener) : capacity_(capacity), opener_(std::move(opener)) {}

  /// The entry's fd, or nullptr with `error` set.
  Fd get(size_t entry, std::string& error) {
    {
      std::lock_guard lock(mu_);
      if (auto it = open_.find(entry); it != open_.end()) return it->second;
    }
    // Opened outside the lock: opening is slow next to a lookup.
    security::UniqueFd fd = opener_(entry, error);
    if (!fd.valid()) return nullptr;
    auto shared = std::make_shared<security::UniqueFd>(std::move(fd));
    Fd dropped;  // closed after the lock is let go: a close is a system call the other threads need not wait for
    std::lock_guard lock(mu_);
    if (auto it = open_.find(entry); it != open_.end()) return it->second;  // another thread won
    if (open_.size() >= capacity_) {
      auto first = open_.begin();
      dropped = std::move(first->second);
      open_.erase(first);
    }
    open_.emplace(entry, shared);
    return shared;
  }

  /// The entry's file opened for one use and not kept (a file read or
  /// written whole at once: a tree of small files would only churn the
  /// cache, each insertion closing another fd under the lock).
  security::UniqueFd open_once(size_t entry, std::string& error) { return opener_(entry, error); }

  void clear() {
    std::lock_guard lock(mu_);
    open_.clear();
  }

 private:
  std::mutex mu_;
  size_t capacity_;
  Opener opener_;
  std::unordered_map<size_t, Fd> open_;
};

}  // namespace braid::files
