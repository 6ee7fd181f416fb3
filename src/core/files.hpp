// Writing a whole file so that a reader sees all of it or none: the reports and summaries baton
// writes at a user's path, and the queue's job specs and statuses that a supervisor and the agent
// read while the other writes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "core/result.hpp"

namespace baton {

// Writes `text` to `path` through a temporary file in the same directory and a rename over it:
// an existing file is never left half-written, and a reader sees the old text or the new. The
// temporary file is made by mkostemp (a random name, O_EXCL: a link planted there by another user
// is never followed) with mode 0600 (reports hold command lines), and a link at `path` is replaced,
// not followed. Errors: "cannot write PATH: REASON", coded by the errno (os_error).
// No fsync: what is written must survive a killed process, which the page cache does.
Status write_file_atomically(const std::string& path, const std::string& text);

// Writes all of `text` to stdout with every control character but newline and tab made visible
// (every view baton prints holds strings from outside: process names, command lines, GPU and host
// names); false on a write error (EPIPE: the reader went away).
bool write_stdout(const std::string& text);

// write_file_atomically(), or write_stdout() when `path` is "-".
Status write_file(const std::string& path, const std::string& text);

// The whole of a small file (a job's spec or status, a /proc or cgroup file), or none when it
// cannot be opened or read or is longer than `max` bytes.
std::optional<std::string> read_small_file(const std::string& path, std::size_t max = 64u << 20);

// A sysfs or /proc value: the file's text (at most 1 MiB) without trailing newlines and blanks
// ("16.0 GT/s PCIe"); empty when it cannot be read, which such lookups take as "unknown".
std::string file_value(const std::string& path);

// Makes `dir` 0700; Ok too when a directory is already there (not a link to one). Errors name it.
Status make_private_directory(const std::string& dir);

// Removes `dir` and everything below it, never following a link (a link is removed, not what it
// names) nor crossing into another file system; what cannot be removed is left. For baton's own
// private directories (a run's events socket, stack handler and stacks).
void remove_tree(const std::string& dir);

}  // namespace baton
