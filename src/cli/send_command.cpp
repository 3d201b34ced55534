#include "cli/send_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>

#include "cli/code_option.hpp"
#include "cli/engine_report.hpp"
#include "cli/find_receiver.hpp"
#include "cli/path_config.hpp"
#include "cli/signal_watch.hpp"
#include "core/chunk_plan.hpp"
#include "core/policy_registry.hpp"
#include "core/transport/cc_registry.hpp"
#include "core/units_parse.hpp"
#include "engine/files/source_tree.hpp"
#include "engine/lanes/endpoint.hpp"
#include "engine/lanes/tcp.hpp"
#include "engine/security/safe_path.h"
#include "engine/transfer/exit_codes.hpp"
#include "engine/transfer/sender_session.hpp"
#include "engine/udp/udp_lane_types.hpp"

namespace braid::cli {
namespace {

struct SendArgs {
  CodeArgs code;
  std::string name;  // --name: the label to pin the receiver under if this run pairs it
  int streams = 2;
  bool streams_given = false;  // --streams N fixes the count; otherwise it follows what helps
  std::vector<std::string> lanes;
  std::vector<std::string> backup, avoid, metered;
  std::string json_file;
  std::string log_file;
  std::string policy = "braid";
  std::string hash = "xxh3";
  std::string chunk = "1MiB";
  size_t max_lanes = 16;
  bool follow_symlinks = false;
  bool strict_sources = false;
  bool sparse = false;     // -S: holes of sparse files cross as nothing and stay holes
  bool hard_links = false;  // -H: a file with several names crosses once and arrives with them all
  files::MetadataOptions metadata;  // -o -g --numeric-ids -X -A
  bool archive = false;             // -a: -o -g (the rest of rsync's -a is always on)
  bool no_compress = false;         // --no-compress: every frame crosses as it is
  std::string compress = "auto";    // --compress auto|always|off
  wire::SyncOptions sync;  // --sync and the flags that imply it
  std::string transport = "tcp";
  std::string cc;
  bool background = false;
  std::string rate_limit;
  std::string latency_target = "5ms";
  std::string packet_size = "auto";
  bool quiet = false;    // -q: no live display, no summary table
  bool verbose = false;  // -v: not on a terminal, a line per 10 %
  std::vector<std::string> operands;  // PATH... HOST[:PORT]|CODE|PEER
};

[[noreturn]] void finish(int code, const std::string& msg) {
  if (!msg.empty()) std::cerr << "braid send: " << msg << "\n";
  std::cout.flush();
  std::exit(code);
}

// The shape of a --lane spec (what lane_paths.cpp reads once connected;
// whether LOCAL is this host's is its business): a command or socket path
// after exec:, pty:, unix:, or [tcp:|udp:]LOCAL=REMOTE:PORT with a numeric REMOTE.
bool lane_spec_shape(std::string spec) {
  for (const char* prefix : {"exec:", "pty:", "unix:"})
    if (spec.rfind(prefix, 0) == 0) return spec.size() > std::string(prefix).size();
  if (spec.rfind("tcp:", 0) == 0 || spec.rfind("udp:", 0) == 0) spec = spec.substr(4);
  const auto eq = spec.find('=');
  return eq != std::string::npos && eq > 0 && lanes::parse_numeric_endpoint(spec.substr(eq + 1), 1).has_value();
}

const char kResumeHint[] = "interrupted: run the same command again to resume";

// What a signal (SignalWatch) finds: the session to interrupt, or — before
// there is one (scanning, connecting) — what it needs to end the run itself.
struct Interruptible {
  std::mutex mu;
  transfer::SenderSession* session = nullptr;
  bool in_transfer = false;  // the main thread is past connect: it finishes the run
  transfer::EventLog* log = nullptr;
  std::string json_file;
};
Interruptible g_run;

void on_signal(int sig) {
  std::lock_guard lock(g_run.mu);
  if (g_run.session) return g_run.session->interrupt("interrupted");
  if (g_run.in_transfer) return;  // the main thread sees SignalWatch::received()
  // Nothing sent yet: nothing to commit. Say so and go (the main thread may be inside connect).
  const int code = SignalWatch::exit_code();
  if (g_run.log) g_run.log->write("status", {{"status", "interrupted"}, {"signal", SignalWatch::name(sig)}});
  if (!g_run.json_file.empty())
    (void)write_json_file(g_run.json_file, {{"role", "send"},
                                            {"status", "interrupted"},
                                            {"exit_code", code},
                                            {"message", kResumeHint},
                                            {"all_verified", false}});
  std::cerr << "braid send: " << kResumeHint << std::endl;
  ::_exit(code);
}

void run_send(const SendArgs& a) {
  using namespace transfer;
  // Before any thread: every thread inherits the blocked signals.
  SignalWatch::start(on_signal);
  {
    std::lock_guard lock(g_run.mu);
    g_run.json_file = a.json_file;
  }
  if (a.operands.size() < 2)
    finish(kExitUsage, "give at least one PATH and then the receiver: its pairing code, a paired peer's name, or HOST[:PORT]");
  if (auto why = check_new_label(a.name); !why.empty()) finish(kExitUsage, why);
  const std::optional<std::string> code = code_or_exit(a.code, "send");
  std::vector<std::string> paths(a.operands.begin(), a.operands.end() - 1);
  const std::string host = a.operands.back();
  if (!lanes::is_host_port(host))
    finish(kExitUsage, "'" + host + "' is not HOST[:PORT] (a port is a number from 1 to 65535), a pairing code or a paired peer's label");
  // Output files before any data moves: a report that cannot be written is a bad command line.
  for (const auto& [flag, file] : {std::pair{"--json", a.json_file}, std::pair{"--log", a.log_file}})
    if (!file.empty())
      if (auto why = check_writable(file); !why.empty()) finish(kExitUsage, std::string(flag) + ": " + why);
  // Lane specs before anything else happens (they are used only once connected).
  for (const auto& spec : a.lanes)
    if (!lane_spec_shape(spec))
      finish(kExitUsage, "bad --lane '" + spec + "' ([tcp:|udp:]LOCAL=REMOTE:PORT, exec:COMMAND, pty:COMMAND or unix:PATH)");
  auto chunk = parse_size(a.chunk);
  if (!chunk || *chunk < core::ChunkPlan::kMinChunk || *chunk > core::ChunkPlan::kMaxChunk)
    finish(kExitUsage, "bad --chunk '" + a.chunk + "' (64KiB to 64MiB)");
  if (!core::make_policy(a.policy)) {
    std::string names;
    for (auto n : core::policy_names()) names += " " + std::string(n);
    finish(kExitUsage, "unknown --policy '" + a.policy + "' (one of:" + names + ")");
  }
  if (a.hash != "xxh3" && a.hash != "sha256") finish(kExitUsage, "bad --hash '" + a.hash + "' (xxh3 or sha256)");
  if (a.transport != "tcp" && a.transport != "udp" && a.transport != "auto")
    finish(kExitUsage, "bad --transport '" + a.transport + "' (tcp, udp or auto)");
  if (a.background && !a.cc.empty() && a.cc != "background")
    finish(kExitUsage, "--background and --cc " + a.cc + " contradict each other");
  // --cc names braid's controller for UDP lanes; TCP lanes get the kernel's
  // nearest one (delay → bbr: model-based, keeps queues short; reno → reno;
  // background → the kernel has no scavenger, its default stays). A kernel
  // name (cubic, bbr, …) sets TCP lanes only; UDP lanes then keep delay.
  std::string cc = a.background ? "background" : a.cc.empty() ? "delay" : a.cc;
  std::string tcp_cc;
  {
    std::string names;
    bool known = false;
    for (const auto& c : braid::transport::controllers()) {
      names += (names.empty() ? "" : ", ") + std::string(c.id);
      known = known || c.id == cc;
    }
    const auto kernel = lanes::kernel_congestion_controls();
    const auto in_kernel = [&](const std::string& n) { return std::find(kernel.begin(), kernel.end(), n) != kernel.end(); };
    if (known) {
      const std::string nearest = cc == "delay" ? "bbr" : cc == "reno" ? "reno" : "";
      if (!nearest.empty() && in_kernel(nearest)) tcp_cc = nearest;
    } else if (in_kernel(cc)) {
      tcp_cc = cc;
      cc = "delay";
    } else {
      std::string k;
      for (const auto& n : kernel) k += (k.empty() ? "" : ", ") + n;
      finish(kExitUsage, "unknown --cc '" + cc + "' (braid's: " + names + "; the kernel's, TCP lanes only: " + k + ")");
    }
  }
  std::map<std::string, Rate> metered;
  for (const auto& m : a.metered) {
    const auto eq = m.find('=');
    const auto r = eq == std::string::npos ? std::nullopt : parse_rate(m.substr(eq + 1));
    if (eq == 0 || !r || r->bytes_per_second() <= 0)
      finish(kExitUsage, "bad --metered '" + m + "' (IFACE=RATE, e.g. wwan0=5Mbit/s)");
    metered[m.substr(0, eq)] = *r;
  }
  // paths.toml, then the flags over it.
  auto loaded = load_path_config(default_path_config_file());
  if (auto* e = std::get_if<PathConfigError>(&loaded)) finish(kExitUsage, e->message);
  PathConfig paths_config = std::get<PathConfig>(loaded);
  apply_flags(paths_config, a.backup, a.avoid, metered);
  std::optional<Rate> rate_limit;
  if (!a.rate_limit.empty()) {
    rate_limit = parse_rate(a.rate_limit);
    if (!rate_limit || rate_limit->bytes_per_second() <= 0)
      finish(kExitUsage, "bad --rate-limit '" + a.rate_limit + "' (e.g. 200Mbit/s)");
  }

  std::optional<Duration> latency_target =
      a.latency_target == "0" ? std::optional(Duration::zero()) : parse_duration(a.latency_target);
  if (!latency_target || *latency_target < Duration::zero() || *latency_target > Duration::seconds(10))
    finish(kExitUsage, "bad --latency-target '" + a.latency_target + "' (e.g. 5ms; 0 turns it off)");

  files::MetadataOptions metadata = a.metadata;
  if (a.archive) metadata.owner = metadata.group = true;
  // The tree is walked while the offer goes (send_walking); the PATHs
  // themselves are checked now, before anything connects. --strict-sources
  // walks it whole first: nothing at all leaves if one entry is bad.
  const files::ScanOptions scan_opts{a.follow_symlinks, a.strict_sources, a.sparse, a.hard_links, metadata};
  if (auto bad = files::check_operands(paths); !bad.empty()) finish(kExitFailure, bad);
  files::SourceTree tree;  // filled by the walk; outlives the transfer
  files::ScanResult scan;  // what the walk skipped, or its error
  // Files alone (no directory among the PATHs) are walked at once: nothing
  // to overlap, and a tree walked before connecting can be offered in TLS's
  // last flight to a pinned receiver.
  const bool walk_first = a.strict_sources || std::none_of(paths.begin(), paths.end(), [](const std::string& p) {
                            std::error_code ec;
                            return std::filesystem::is_directory(p, ec);
                          });
  if (walk_first) {
    scan = files::scan_sources(paths, scan_opts);
    if (!scan.ok()) finish(kExitFailure, scan.error);
    tree = std::move(scan.tree);
  }

  EventLog log;
  std::string error;
  if (!a.log_file.empty() && !log.open(a.log_file, error)) finish(kExitUsage, "--log: " + error);
  {
    std::lock_guard lock(g_run.mu);
    g_run.log = &log;
  }

  auto target = find_receiver(host, code, kBrowseSeconds);
  if (auto* f = std::get_if<Failure>(&target)) finish(f->exit_code, f->message);
  ConnectOptions co;
  co.code = std::get<SendTarget>(target).code;
  co.pin_label = a.name;
  co.peer_label = label_addressed(host);
  co.streams = a.streams;
  co.grow_streams = !a.streams_given;
  co.lanes = a.lanes;
  co.backup = paths_config.backup;
  co.avoid = paths_config.avoid;
  co.max_lanes = a.max_lanes;
  co.transport = a.transport == "udp" ? Transport::udp : a.transport == "auto" ? Transport::automatic : Transport::tcp;
  co.cc = cc;
  co.tcp_cc = tcp_cc;
  co.packet_size = a.packet_size == "auto" ? udp::kPathMtuPacketSize : std::stoul(a.packet_size);
  co.rate_limit = rate_limit;
  co.latency_target = *latency_target;
  co.metered = paths_config.metered;
  TransferOptions to;
  to.policy = a.policy;
  to.hash = a.hash == "sha256" ? wire::HashAlgo::sha256 : wire::HashAlgo::xxh3_128;
  to.chunk_size = chunk->count();
  to.sync = a.sync;
  to.compress = a.no_compress || a.compress == "off" ? compress::Mode::off
                : a.compress == "always"             ? compress::Mode::always
                                                     : compress::Mode::automatic;
  // Each of rsync's flags for existing files only means something in a sync.
  to.sync.sync = a.sync.sync || a.sync.checksum || a.sync.update || a.sync.ignore_existing ||
                 a.sync.delete_extraneous || a.sync.dry_run;
  to.last = true;  // one transfer per `braid send`: the receiver closes with its verdict
  // Its offer goes in TLS's last flight when the receiver is pinned here.
  co.first_tree = walk_first ? &tree : nullptr;
  co.first_options = &to;
  auto connected = connect_any(std::get<SendTarget>(target), co, log, "send");
  if (auto* f = std::get_if<Failure>(&connected)) finish(f->exit_code, f->message);
  auto session = std::move(std::get<0>(connected));
  {
    std::lock_guard lock(g_run.mu);
    g_run.session = session.get();
    g_run.in_transfer = true;
  }
  if (SignalWatch::received()) session->interrupt("interrupted");  // came while connect returned
  if (const auto& peer = session->peer(); peer.how == security::PeerAuth::paired)
    std::cerr << "braid send: paired with '" << peer.name << "' (" << security::short_fingerprint(peer.fingerprint)
              << "); pinned in known_peers, no code needed next time (braid peers)" << std::endl;

  LiveDisplay display(LiveDisplay::mode_for(STDERR_FILENO, a.quiet, a.verbose));
  to.display = &display;
  TransferOutcome out = walk_first ? session->send(tree, to) : session->send_walking(paths, scan_opts, tree, scan, to);
  for (const auto& sk : scan.skipped)
    std::cerr << "braid send: skipped '" << security::printable_path(sk.path) << "': " << sk.reason << "\n";
  const int sig = SignalWatch::received();
  if (sig && !(out.exit_code == 0 && out.report.verified)) {  // a signal after the end changes nothing
    out.exit_code = SignalWatch::exit_code();
    out.message = kResumeHint;
    out.report.status = "interrupted";
    log.write("status", {{"status", "interrupted"}, {"signal", SignalWatch::name(sig)}});
  }
  // The summary the moment the result is known, not after the lanes' goodbyes.
  if (!a.quiet && !out.report.lanes.empty()) std::cout << lane_table(out.report) << std::flush;
  if (!a.quiet && out.report.sync.on) std::cout << sync_summary(out.report) << std::flush;
  {
    std::lock_guard lock(g_run.mu);
    g_run.session = nullptr;
  }
  session->close();

  // Everything sent verified, but not everything given could be sent: say so in the status.
  if (out.exit_code == 0 && !scan.skipped.empty()) {
    out.exit_code = kExitPartial;
    out.message = "every file sent arrived verified, but " + std::to_string(scan.skipped.size()) +
                  (scan.skipped.size() == 1 ? " source was" : " sources were") + " skipped (see above)";
  }
  if (!a.json_file.empty()) {
    nlohmann::json doc = to_json(out.report);
    doc["exit_code"] = out.exit_code;
    doc["message"] = out.message;
    doc["all_verified"] = out.exit_code == 0 && out.report.verified;
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& sk : scan.skipped) skipped.push_back({{"path", sk.path}, {"reason", sk.reason}});
    doc["skipped"] = skipped;
    doc["cpu"] = transfer::to_json(transfer::process_cpu_use(), transfer::moved_bytes(out.report));
    if (auto e = write_json_file(a.json_file, doc); !e.empty()) std::cerr << "braid send: " << e << "\n";
  }
  finish(out.exit_code, out.exit_code == 0 ? "" : out.message);
}

}  // namespace

void add_send_command(CLI::App& app) {
  auto args = std::make_shared<SendArgs>();
  CLI::App* cmd = app.add_subcommand("send", "Send files and directories to a `braid recv`");
  add_code_options(cmd, args->code, "The pairing code the receiver printed (not needed once paired)");
  cmd->add_option("--name", args->name,
                  "If this run pairs with the receiver, pin it under this label (default: the name it claims, "
                  "made unique: vm, vm-2)");
  cmd->add_option("--streams", args->streams,
                  "Parallel lanes per path, fixed (default: 2 to start, then one more at a time while the transfer "
                  "gets faster, up to 8)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--lane", args->lanes,
                  "A lane by hand: [tcp:|udp:]LOCAL=REMOTE_ADDR:PORT (LOCAL: an address or interface of this host), "
                  "exec:COMMAND, pty:COMMAND or unix:PATH "
                  "(repeatable; no prefix: --transport)")
      ->allow_extra_args(false);  // one value per --lane: PATHs may follow
  cmd->add_option("--json", args->json_file, "Write the final report as JSON to FILE");
  cmd->add_option("--log", args->log_file, "Write the activity log as JSON lines to FILE");
  cmd->add_option("--policy", args->policy, "Scheduling policy: braid|ecf|minrtt|roundrobin|queue|seed-old");
  cmd->add_option("--hash", args->hash, "Piece hash: xxh3 (default) or sha256");
  cmd->add_option("--chunk", args->chunk, "Chunk size, 64KiB to 64MiB (default 1MiB)");
  cmd->add_option("--backup", args->backup,
                  "An interface whose paths carry data only while no other path does, e.g. a phone's "
                  "cellular link (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--avoid", args->avoid, "An interface not to use while any other reaches the receiver (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--metered", args->metered,
                  "IFACE=RATE: the lanes leaving through IFACE share at most RATE on the wire, e.g. wwan0=5Mbit/s "
                  "(repeatable; within --rate-limit)")
      ->allow_extra_args(false);
  cmd->add_option("--max-lanes", args->max_lanes, "Most lanes to open (default 16)")->check(CLI::Range(1, 256));
  cmd->add_option("--transport", args->transport,
                  "Lane kind for discovered lanes: tcp (default), udp, or auto (UDP on a long-RTT or lossy path)");
  cmd->add_option("--cc", args->cc,
                  "Congestion control: delay (default), background or reno for UDP lanes (TCP lanes get the kernel's "
                  "nearest: bbr, default, reno), or a kernel controller such as cubic for TCP lanes");
  cmd->add_flag("--background", args->background,
                "Yield to other traffic: UDP lanes run --cc background, TCP lanes get a pacing cap from their "
                "delay (both step aside while another flow needs the path)");
  cmd->add_option("--rate-limit", args->rate_limit,
                  "Cap what the whole transfer puts on the network, headers in, e.g. 200Mbit/s (split over the lanes)");
  cmd->add_option("--latency-target", args->latency_target,
                  "Queueing delay the TCP lanes leaving by one interface aim for together, so a slow uplink stays "
                  "responsive (default 5ms; 0: each lane's kernel controller runs free)");
  cmd->add_option("--packet-size", args->packet_size,
                  "UDP datagram size in bytes, 1200 to 9000, or auto: the largest the path MTU carries (default)")
      ->check([](const std::string& v) -> std::string {
        if (v == "auto") return {};
        try {
          size_t used = 0;
          const unsigned long n = std::stoul(v, &used);
          if (used == v.size() && n >= udp::kMinPacketSize && n <= udp::kMaxPacketSize) return {};
        } catch (const std::exception&) {
        }
        return "expected auto or a number from " + std::to_string(udp::kMinPacketSize) + " to " +
               std::to_string(udp::kMaxPacketSize) + ", got '" + v + "'";
      });
  cmd->add_flag("-q,--quiet", args->quiet, "No live display and no summary table (errors still go to stderr)");
  cmd->add_flag("-v,--verbose", args->verbose,
                "When stderr is not a terminal, a progress line per 10 % (on a terminal the display is live)");
  cmd->add_flag("-L,--follow-symlinks", args->follow_symlinks,
                "Send what symlinks point to instead of the links (a link loop or a broken link is skipped)");
  cmd->add_flag("--strict-sources", args->strict_sources,
                "A source braid cannot send (FIFO, socket, device, unreadable file, link loop) is an error, "
                "not skipped with a warning (exit 11)");
  // Metadata: rsync's flags with rsync's meanings (docs/engine.md, "Metadata").
  cmd->add_flag("-S,--sparse", args->sparse,
                "Send the holes of sparse files as nothing and recreate them as holes (a file with more than " +
                    std::to_string(wire::kMaxDataRanges) + " data ranges is sent as plain data)");
  cmd->add_flag("-H,--hard-links", args->hard_links,
                "Send a file with several names in the tree once and recreate its other names as hard links");
  cmd->add_flag("-o,--owner", args->metadata.owner,
                "Give each entry its owner here (by name, else by id; applied when the receiver runs as root)");
  cmd->add_flag("-g,--group", args->metadata.group,
                "Give each entry its group here (by name, else by id; as root, or a group the receiver is in)");
  cmd->add_flag("--numeric-ids", args->metadata.numeric_ids,
                "With -o/-g: send user and group ids only, never map them by name");
  cmd->add_flag("-X,--xattrs", args->metadata.xattrs,
                "Send extended attributes (user.*; trusted.* and security.* where readable) of files and directories");
  cmd->add_flag("-A,--acls", args->metadata.acls,
                "Send POSIX ACLs (access, and directories' default ACLs) of files and directories");
  cmd->add_flag("--no-compress", args->no_compress, "Send every frame as it is (--compress off)");
  cmd->add_option("--compress", args->compress,
                  "auto (default): zstd-compress a 256 KiB frame of a TCP or stream lane when its sample looks "
                  "compressible and the lane is slower than compressing (kept only if it saves 5 %); always: "
                  "whatever the lane's speed; off")
      ->check(CLI::IsMember({"auto", "always", "off"}));
  cmd->add_flag("-a,--archive", args->archive,
                "rsync's -a: -o -g (recursion, symlinks as links, permissions and mtimes are always kept; devices "
                "and special files are skipped); -H, -S, -X, -A are separate, as with rsync");
  // Sync: rsync's flags with rsync's meanings (docs/engine.md, "Sync").
  cmd->add_flag("--sync", args->sync.sync,
                "Files that exist on the receiver: skip those whose size and mtime match, send only the changed "
                "chunks of the rest (the new version replaces the old once complete and verified)");
  cmd->add_flag("--checksum", args->sync.checksum,
                "With --sync: compare every existing file by its chunks' hashes, even when size and mtime match "
                "(implies --sync)");
  cmd->add_flag("-u,--update", args->sync.update, "Skip files that are newer on the receiver (implies --sync)");
  cmd->add_flag("--ignore-existing", args->sync.ignore_existing,
                "Skip every file that exists on the receiver (implies --sync)");
  cmd->add_flag("--delete", args->sync.delete_extraneous,
                "Remove what the sent directories hold on the receiver and the source no longer has, once the "
                "transfer verified; never outside them, never through a symlink (implies --sync)");
  // rsync's --backup --suffix / --backup-dir; --backup is taken here (an interface that waits).
  cmd->add_option("--backup-suffix", args->sync.backup_suffix,
                  "Keep the old version of each file the transfer replaces or --delete removes on the receiver as "
                  "NAME+SUFFIX beside it (rsync's --backup --suffix, named so because --backup here is an "
                  "interface; rsync's default suffix is ~: --backup-suffix '~'); the new version still replaces the "
                  "old only once complete and verified")
      ->check([](const std::string& v) -> std::string {
        if (v.empty()) return "the suffix must not be empty (--backup-dir alone keeps the names as they are)";
        if (v.find('/') != std::string::npos) return "the suffix must not hold a '/'";
        if (v.size() > wire::kMaxBackupSuffixBytes) return "the suffix is too long";
        return {};
      });
  cmd->add_option("--backup-dir", args->sync.backup_dir,
                  "Keep those old versions under DIR instead, a directory relative to the receiver's target (made "
                  "as needed; their paths below it as sent, plus --backup-suffix if given); --delete leaves DIR alone")
      ->check([](const std::string& v) -> std::string {
        auto rel = security::RelativePath::parse(v);
        if (!rel) return "DIR must be a relative path inside the receiver's target: " + rel.error().message;
        if (rel.value().str() != v) return "DIR must be written plainly, as " + rel.value().str();
        return {};
      });
  cmd->add_flag("-n,--dry-run", args->sync.dry_run,
                "List what would be sent, updated, skipped and deleted; send, write and remove nothing "
                "(implies --sync)");
  // The receiver is the code `braid recv` printed (found on the local
  // network), a paired peer's label (found by its key), or HOST[:PORT].
  cmd->add_option("operands", args->operands, "PATH... CODE|LABEL|HOST[:PORT]")->required();
  cmd->callback([args, cmd] {
    args->streams_given = cmd->count("--streams") > 0;
    run_send(*args);
  });
}

}  // namespace braid::cli
