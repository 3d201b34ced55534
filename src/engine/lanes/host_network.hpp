// What this host's network looks like, for the path planner
// (core/paths/path_plan.hpp): its interfaces with their addresses
// (getifaddrs) and its main routing table (an rtnetlink dump).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/paths/path_plan.hpp"
#include "engine/lanes/endpoint.hpp"

namespace braid::lanes {

/// Every interface with an IPv4 or IPv6 address, up or down.
std::vector<paths::Interface> read_interfaces();

/// The main table's unicast routes, both families. Empty (with `error`) if
/// the kernel could not be asked: the planner then keeps to own subnets.
std::vector<paths::Route> read_routes(std::string& error);

paths::IpBytes ip_bytes_of(const Endpoint& e);

}  // namespace braid::lanes
