// What a session machine's poll_action() queued, for tests that drive the
// Sender and Receiver by hand: all of it, or the actions of one kind.
#pragma once

#include <variant>
#include <vector>

namespace braid::session::test {

/// Every action `m` has queued, in order; `m` is polled dry.
template <class M>
auto poll_all(M& m) {
  std::vector<std::remove_cvref_t<decltype(*m.poll_action())>> out;
  while (auto a = m.poll_action()) out.push_back(std::move(*a));
  return out;
}

/// The actions of kind A among `actions`.
template <class A, class Action>
std::vector<A> only(const std::vector<Action>& actions) {
  std::vector<A> out;
  for (const auto& a : actions)
    if (const auto* x = std::get_if<A>(&a)) out.push_back(*x);
  return out;
}

/// Polls `m` dry and keeps its actions of kind A.
template <class A, class M>
std::vector<A> drain(M& m) {
  return only<A>(poll_all(m));
}

}  // namespace braid::session::test
