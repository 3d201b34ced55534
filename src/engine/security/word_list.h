// The words of pairing codes (pairing_code.h): 2048 common, lower-case
// English words of 3 to 8 letters, so each word carries 11 bits.
//
// Made by tools/wordlist/make_wordlist.py from Debian's wamerican (the rules
// are there) and committed as word_list_data.cpp. The list is sorted; a
// word's index is its value. Two properties the parser relies on:
//   - the first four letters (the whole word for a 3-letter word) name one
//     word, so a unique prefix of at least four letters is enough to type;
//   - no two words are one edit apart (insert, delete, replace, swap of
//     neighbours), so one typo never yields another word.
// Pure: no I/O.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace braid::security {

inline constexpr std::size_t kCodeWordCount = 2048;
inline constexpr std::size_t kCodeWordBits = 11;  // log2(kCodeWordCount)
inline constexpr std::size_t kCodeWordPrefix = 4;  // letters that name a word

extern const std::array<std::string_view, kCodeWordCount> kCodeWords;

// The index of the word `typed` (lower case) names: the word itself, or a
// prefix of at least kCodeWordPrefix letters that starts exactly one word.
std::optional<std::size_t> find_code_word(std::string_view typed);

// The words nearest to `typed` (lower case) within 2 edits (insert,
// delete, replace, swap of neighbours), for "did you mean": the nearest
// ones in list order, at most 3; empty when none is that near, or when
// more than 3 are equally near (no help then).
std::vector<std::string_view> nearest_code_words(std::string_view typed);

}  // namespace braid::security
