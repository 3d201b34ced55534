// Seeds for fuzz_mdns_packet (fuzz/seeds/mdns_seeds.cpp).
#pragma once

#include <filesystem>

namespace braid::fuzz {

/// Writes OUT/mdns_packet/<name>.
void mdns_seeds(const std::filesystem::path& out);

}  // namespace braid::fuzz
