// Output files of the GUI; see gui_output.h.
#include "ui/gui_output.h"

#include <QBuffer>
#include <QByteArray>
#include <fstream>

#include "core/common/error.h"
#include "core/common/output_file.h"

namespace parascope::ui {

void writeOutput(const std::string& path, const std::string& what, std::string_view bytes) {
  OutputFile out(path, what);
  out.write(bytes.data(), bytes.size());
  out.commit();
}

void writePng(const QImage& image, const std::string& path, const std::string& what) {
  QByteArray png;
  QBuffer buffer(&png);
  buffer.open(QIODevice::WriteOnly);
  if (!image.save(&buffer, "PNG")) {
    throw UserError(what + " '" + path + "': the image cannot be encoded as PNG");
  }
  writeOutput(path, what, std::string_view(png.constData(), static_cast<std::size_t>(png.size())));
}

void copyToOutput(const std::string& from, const std::string& path, const std::string& what) {
  std::ifstream in(from, std::ios::binary);
  if (!in) throw UserError(what + ": cannot read '" + from + "'");
  OutputFile out(path, what);
  char block[1 << 16];
  while (in.read(block, sizeof block) || in.gcount() > 0) {
    out.write(block, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw UserError(what + ": cannot read '" + from + "'");
  out.commit();
}

}  // namespace parascope::ui
