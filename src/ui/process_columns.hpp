// The process table's optional columns: which exist, their headers and widths, the names the
// config and --columns use, the letters of the column prompt (`c`). PID and COMMAND are always
// shown; the others in this fixed order when chosen.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace baton::ui {

enum class Column : std::uint8_t {
    user,
    state,             // S: R running, S sleeping, D uninterruptible (I/O), Z zombie, ...
    gpu,               // the GPU indices it runs on
    gpu_memory,        // GMEM: its GPU memory, summed over them
    gpu_memory_share,  // GMEM%: that memory as a share of those GPUs' memory
    sm,                // SM%: its share of the GPUs' SM time (NVML)
    cpu,
    rss,
    io,       // read + write per second (TREE% in tree mode)
    threads,  // THR
    age,      // AGE: time since it started
};

struct ColumnSpec {
    Column column;
    const char* name;    // in [top] columns and --columns
    const char* header;  // in the table
    int width;
    char letter;  // toggles it in the column prompt
};

// Every optional column, in display order.
const std::vector<ColumnSpec>& column_specs();

using ColumnSet = std::uint32_t;  // bit (1 << Column)
constexpr ColumnSet column_bit(Column c) {
    return ColumnSet{1} << static_cast<unsigned>(c);
}
// USER GPU GMEM SM% CPU% RSS IO/s: the table before the optional columns existed.
ColumnSet default_columns();

// "user,gpu,gmem,cpu" (names of column_specs, comma- or space-separated) as a set; an unknown name
// is an error naming it and the known ones.
Result<ColumnSet> parse_columns(std::string_view list);

}  // namespace baton::ui
