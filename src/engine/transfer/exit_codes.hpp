// The exit status of `braid send` and `braid recv`: 0 only when every file
// arrived and verified; a distinct code for each usual failure, so scripts
// can tell them apart (docs/engine.md lists them).
#pragma once

namespace braid::transfer {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,        // anything not listed below
  kExitUsage = 2,          // bad command line (also: a --json/--log file that cannot be written), before any connect
  kExitUnreachable = 3,    // the peer could not be reached (connect failed, timed out), or what answered
                           // is not a braid receiver (Errc::not_braid: "it answered like HTTP")
  kExitAuthFailed = 4,     // wrong pairing code, or a code was needed and none given
  kExitKeyChanged = 5,     // a pinned peer presented another key (or refused ours)
  kExitRefused = 6,        // the receiver refused the offer, or its braid protocol is older than a feature the
                           // offer needs (told by the sender before it sends anything)
  kExitNotWritable = 7,    // the target directory cannot be written
  kExitDiskFull = 8,       // no space left for the data (temporary files are kept)
  kExitVerifyFailed = 9,   // a hash did not match
  kExitLanesLost = 10,     // every lane failed before the transfer completed
  kExitPartial = 11,       // send: everything sent arrived verified, but some sources were skipped
                           // (FIFOs, sockets, devices, unreadable files, link loops; listed in --json)
  kExitSigint = 130,       // interrupted by SIGINT (128 + 2): the same command resumes
  kExitSigterm = 143,      // interrupted by SIGTERM (128 + 15)
};

}  // namespace braid::transfer
