// A connected loopback TCP pair for engine tests that need a real socket.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <utility>

#include <gtest/gtest.h>

#include "engine/security/unique_fd.h"

namespace braid::test {

/// {client, server}, connected over 127.0.0.1.
inline std::pair<security::UniqueFd, security::UniqueFd> tcp_pair() {
  security::UniqueFd listener(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(listener.get(), 1), 0);
  EXPECT_EQ(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  security::UniqueFd client(::socket(AF_INET, SOCK_STREAM, 0));
  EXPECT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  security::UniqueFd server(::accept(listener.get(), nullptr, nullptr));
  return {std::move(client), std::move(server)};
}

}  // namespace braid::test
