#include "cli/clean_command.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>

#include "core/units_parse.hpp"
#include "engine/files/debris.hpp"
#include "engine/security/safe_path.h"
#include "engine/security/unique_fd.h"
#include "engine/transfer/exit_codes.hpp"

namespace braid::cli {
namespace {

struct CleanArgs {
  std::string dir;
  std::string older_than = "7d";
  bool dry_run = false;
};

void run_clean(const CleanArgs& a) {
  using namespace transfer;
  security::UniqueFd dir(::open(a.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) {
    std::cerr << "braid clean: cannot open '" << a.dir << "': " << std::strerror(errno) << "\n";
    std::exit(kExitFailure);
  }
  const auto age = *files::parse_age(a.older_than);  // checked by the option
  const files::DebrisResult r = files::clean_debris(dir.get(), files::DebrisOptions{age, a.dry_run});
  const char* verb = a.dry_run ? "would remove" : "removed";
  for (const auto& e : r.removed) std::cout << verb << " " << security::printable_path(e.path) << "\n";
  for (const auto& e : r.kept) std::cout << "kept " << security::printable_path(e.path) << ": " << e.why << "\n";
  for (const auto& e : r.failed)
    std::cerr << "braid clean: cannot remove '" << security::printable_path(e.path) << "': " << e.why << "\n";
  std::cout << "braid clean: " << verb << " " << r.removed.size() << " files (" << format_size(Bytes(r.removed_bytes)) << ") of "
            << r.removed_transfers << " interrupted transfers older than " << files::format_age(age) << "; kept "
            << r.kept.size() << std::endl;
  std::exit(r.failed.empty() ? kExitOk : kExitFailure);
}

}  // namespace

std::string check_age(const std::string& text) {
  if (files::parse_age(text)) return {};
  return "expected an age such as 7d, 12h, 30min, 45s or 0, got '" + text + "'";
}

void add_clean_command(CLI::App& app) {
  auto args = std::make_shared<CleanArgs>();
  CLI::App* cmd = app.add_subcommand(
      "clean", "Remove what interrupted transfers left in a target directory (.braid-* files no run resumed)");
  cmd->add_option("dir", args->dir, "The receiver's target directory")->required();
  cmd->add_option("--older-than", args->older_than,
                  "Only transfers left alone this long (default 7d; 0: every one not running). A younger one may "
                  "still resume")
      ->check(check_age);
  cmd->add_flag("--dry-run", args->dry_run, "Say what would be removed; remove nothing");
  cmd->callback([args] { run_clean(*args); });
}

}  // namespace braid::cli
