// Files the GUI writes (screenshots, exported images, tables and traces) go through the
// project's one writer, core/common/output_file.h: the path is judged first (a symbolic link,
// directory, device, FIFO or socket there is refused, never written through or waited on), the
// bytes go to a temporary beside it, renamed over the target once complete.
#pragma once

#include <QImage>
#include <string>
#include <string_view>

namespace parascope::ui {

// UserError "<what> '<path>': <why>" when the file cannot be written.
void writeOutput(const std::string& path, const std::string& what, std::string_view bytes);
void writePng(const QImage& image, const std::string& path, const std::string& what);
// A copy of the file `from` (one the GUI wrote itself), read and written a block at a time.
void copyToOutput(const std::string& from, const std::string& path, const std::string& what);

}  // namespace parascope::ui
