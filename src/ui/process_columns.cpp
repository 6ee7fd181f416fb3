#include "ui/process_columns.hpp"

#include "core/printable.hpp"

namespace baton::ui {

const std::vector<ColumnSpec>& column_specs() {
    static const std::vector<ColumnSpec> specs = {
        {Column::user, "user", "USER", 8, 'u'},
        {Column::state, "state", "S", 1, 's'},
        {Column::gpu, "gpu", "GPU", 3, 'g'},
        {Column::gpu_memory, "gmem", "GMEM", 5, 'm'},
        {Column::gpu_memory_share, "gmem_share", "GMEM%", 5, 'M'},
        {Column::sm, "sm", "SM%", 4, 'S'},
        {Column::cpu, "cpu", "CPU%", 5, 'c'},
        {Column::rss, "rss", "RSS", 5, 'r'},
        {Column::io, "io", "IO/s", 6, 'i'},
        {Column::threads, "threads", "THR", 4, 't'},
        {Column::age, "age", "AGE", 6, 'a'},
    };
    return specs;
}

ColumnSet default_columns() {
    return column_bit(Column::user) | column_bit(Column::gpu) | column_bit(Column::gpu_memory) |
           column_bit(Column::sm) | column_bit(Column::cpu) | column_bit(Column::rss) | column_bit(Column::io);
}

Result<ColumnSet> parse_columns(std::string_view list) {
    ColumnSet set = 0;
    std::size_t at = 0;
    while (at < list.size()) {
        const std::size_t end = list.find_first_of(", ", at);
        const std::string_view name = list.substr(at, end == std::string_view::npos ? list.size() - at : end - at);
        at = end == std::string_view::npos ? list.size() : end + 1;
        if (name.empty()) continue;
        bool found = false;
        for (const ColumnSpec& c : column_specs())
            if (name == c.name) {
                set |= column_bit(c.column);
                found = true;
            }
        if (!found) {
            std::string known;
            for (const ColumnSpec& c : column_specs()) known += (known.empty() ? "" : ", ") + std::string(c.name);
            return make_error("unknown column '" + printable(name) + "' (known: " + known + ")");
        }
    }
    return set;
}

}  // namespace baton::ui
