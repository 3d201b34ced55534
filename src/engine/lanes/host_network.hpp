// What this host's network looks like, for the path planner
// (core/paths/path_plan.hpp): its interfaces with their addresses
// (getifaddrs) and its main routing table (an rtnetlink dump).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/paths/path_plan.hpp"
#include "engine/lanes/endpoint.hpp"
#include "engine/security/unique_fd.h"

namespace braid::lanes {

/// Every interface with an IPv4 or IPv6 address, up or down.
std::vector<paths::Interface> read_interfaces();

/// The main table's unicast routes, both families. Empty (with `error`) if
/// the kernel could not be asked: the planner then keeps to own subnets.
std::vector<paths::Route> read_routes(std::string& error);

paths::IpBytes ip_bytes_of(const Endpoint& e);

/// A netlink socket that hears every change of links, addresses and routes
/// (RTMGRP_LINK, *_IFADDR, *_ROUTE), non-blocking. Invalid with `error` if
/// the kernel refused.
security::UniqueFd open_network_watch(std::string& error);
/// Reads what is waiting on a network watch; true if any of it was a change.
bool drain_network_watch(int fd);

}  // namespace braid::lanes
