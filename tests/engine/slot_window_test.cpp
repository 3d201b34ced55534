// SlotWindow (engine/files/slot_window.hpp): by-entry state whose front
// goes, with the few slots set aside found again by their entry.
#include "engine/files/slot_window.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <vector>

namespace braid::files {
namespace {

struct Counted {
  explicit Counted(int v) : value(v) {}
  Counted(Counted&& o) noexcept : value(o.value.load()), moved(o.moved + 1) {}
  std::atomic<int> value;  // not movable by itself: the window moves a slot only to set it aside
  int moved = 0;
};

TEST(SlotWindow, TheFrontGoesAndOnlyTheSlotsSetAsideAreFoundBelowIt) {
  SlotWindow<Counted> w;
  for (int i = 0; i < 1000; ++i) w.emplace_back(i);
  Counted* held = w.find(700);
  ASSERT_NE(held, nullptr);
  // Entries 0 … 499 go; every hundredth is set aside.
  std::vector<size_t> asked;
  w.let_go_before(500, [&](size_t i, Counted& c) {
    asked.push_back(i);
    EXPECT_EQ(c.value, static_cast<int>(i));
    return i % 100 == 0;
  });
  ASSERT_EQ(asked.size(), 500u);
  for (size_t i = 0; i < asked.size(); ++i) EXPECT_EQ(asked[i], i) << "in entry order";
  EXPECT_EQ(w.base(), 500u);
  EXPECT_EQ(w.size(), 1000u);
  EXPECT_EQ(w.held(), 505u);
  EXPECT_EQ(w.set_aside(), 5u);
  EXPECT_EQ(w.find(700), held) << "a slot in the window never moves";
  for (size_t i = 0; i < 500; ++i) {
    const Counted* c = w.find(i);
    if (i % 100 != 0) {
      EXPECT_EQ(c, nullptr) << i;
      continue;
    }
    ASSERT_NE(c, nullptr) << i;
    EXPECT_EQ(c->value, static_cast<int>(i));
    EXPECT_EQ(c->moved, 1);
  }
  EXPECT_EQ(w.find(1000), nullptr);
  // More come and go; the slots set aside stay where they were.
  const Counted* aside = w.find(300);  // a map's node: it stays where it is
  for (int i = 1000; i < 1200; ++i) w.emplace_back(i);
  w.let_go_before(1100, [](size_t i, Counted&) { return i == 1050; });
  EXPECT_EQ(w.find(300), aside);
  EXPECT_EQ(w.held(), 100u + 6u);
  // Every slot held, by entry.
  std::vector<size_t> order;
  w.for_each([&](size_t i, Counted& c) {
    order.push_back(i);
    EXPECT_EQ(c.value, static_cast<int>(i));
  });
  ASSERT_EQ(order.size(), 106u);
  EXPECT_EQ(order.front(), 0u);
  EXPECT_EQ(order[5], 1050u);
  EXPECT_EQ(order[6], 1100u);
  EXPECT_EQ(order.back(), 1199u);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  // A slot set aside may go on its own; one in the window may not.
  EXPECT_TRUE(w.forget_aside(200));
  EXPECT_FALSE(w.forget_aside(200));
  EXPECT_FALSE(w.forget_aside(1150));
  EXPECT_EQ(w.find(200), nullptr);
  EXPECT_EQ(w.find(300), aside);
  EXPECT_EQ(w.held(), 105u);
  // Letting go past the end stops at the end.
  w.let_go_before(5000, [](size_t, Counted&) { return false; });
  EXPECT_EQ(w.base(), 1200u);
  EXPECT_EQ(w.held(), 5u);
}

}  // namespace
}  // namespace braid::files
